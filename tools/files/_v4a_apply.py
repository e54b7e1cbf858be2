"""Applying a parsed V4A patch: everything checked and computed in memory first, then written.

Each path goes through the session's sandbox policy and the write guards; every hunk is matched
(through the same fuzzy chain as ``mode='replace'``) against the file as the earlier operations
of the patch left it. Only when every operation succeeds in memory is anything written, so a
hunk that fails leaves every file as it was, as in Hermes. A write that fails part-way (a full
disk) says which files were already written.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from tools.errors import ToolInputError
from tools.files._atomic import atomic_write, remove_in_checked_dir
from tools.files._fuzzy import AmbiguousMatch, already_applied, fuzzy_replace
from tools.files._guard import Target, parent_check
from tools.files._markers import check_no_marker_over_secret
from tools.files._textio import Original, read_editable
from tools.files._v4a import FileOp, Hunk, OpKind
from tools.jail.policy import JailPolicy

__all__ = ["FileState", "PatchPlan", "PatchRejected", "apply_plan", "plan_patch", "plan_result"]


class PatchRejected(ToolInputError):
    """The patch cannot be applied as a whole; no file was changed. Lists each failing file and hunk."""


@attrs.define
class FileState:
    """One file a patch touches: how it was and how it will be.

    Attributes:
        target: the checked path.
        label: the path as the patch first named it (diffs use it).
        original: the file before the patch.
        content: the text it will have; None: it will not exist.
        mode: the permission bits a new file gets (a moved file keeps its own).
    """

    target: Target
    label: str
    original: Original
    content: str | None
    mode: int | None = None

    @property
    def changed(self) -> bool:
        """Whether the patch changes this file."""
        return self.content != self.original.text


@attrs.define
class PatchPlan:
    """A patch computed in memory: the files by shown path, in the order first named, and the moves (from, to)."""

    files: dict[str, FileState] = attrs.field(factory=dict)
    moves: list[tuple[str, str]] = attrs.field(factory=list)


def _hunk_label(number: int, hunk: Hunk) -> str:
    return f"hunk {number}" + (f" (@@ {hunk.hint})" if hunk.hint else "")


def _insert_after_hint(text: str, hunk: Hunk, added: str) -> str:
    """An addition-only hunk: its lines go after the line holding its hint, or at the end without one."""
    if hunk.hint:
        count = text.count(hunk.hint)
        if count > 1:
            raise ToolInputError(f"its hint '{hunk.hint}' occurs {count} times; give a hint found once")
        if count == 1:
            line_end = text.find("\n", text.find(hunk.hint))
            if line_end == -1:
                return f"{text}\n{added}"
            return f"{text[: line_end + 1]}{added}\n{text[line_end + 1 :]}"
    return f"{text.rstrip(chr(10))}\n{added}\n" if text else f"{added}\n"


def _apply_hunk(text: str, hunk: Hunk, shown: str) -> str:
    before, after = hunk.before(), hunk.after()
    if not hunk.changes() or before == after:
        return text
    if not before.strip():
        return _insert_after_hint(text, hunk, after)
    try:
        return fuzzy_replace(text, before, after, False, shown).text
    except AmbiguousMatch:
        # The hint says where: look from the line that holds it.
        if not hunk.hint or text.count(hunk.hint) != 1:
            raise
        start = text.rfind("\n", 0, text.find(hunk.hint)) + 1
        return text[:start] + fuzzy_replace(text[start:], before, after, False, shown).text
    except ToolInputError:
        if already_applied(text, before, after):  # a re-sent patch: this hunk is in the file already
            return text
        raise


class _Planner:
    """Runs a patch's operations over an in-memory copy of the files they touch."""

    def __init__(self, policy: JailPolicy, resolve: Callable[[str], Target]) -> None:
        self.policy = policy
        self.resolve = resolve
        self.plan = PatchPlan()

    def load(self, raw: str) -> FileState:
        target = self.resolve(raw)
        state = self.plan.files.get(target.shown)
        if state is None:
            original = read_editable(self.policy, target, "")
            state = self.plan.files[target.shown] = FileState(target, raw, original, original.text, original.mode)
        return state

    def existing(self, raw: str, doing: str) -> FileState:
        state = self.load(raw)
        if state.content is None:
            raise ToolInputError(f"there is no such file to {doing}")
        return state

    def move(self, source: FileState, raw: str, content: str) -> None:
        destination = self.load(raw)
        if destination.content is not None:
            raise ToolInputError(f"the destination {destination.target.shown} already exists; the move would overwrite it")
        destination.content, destination.mode = content, source.original.mode
        source.content = None
        self.plan.moves.append((source.target.shown, destination.target.shown))

    def run(self, op: FileOp) -> None:
        if op.kind is OpKind.ADD:
            state = self.load(op.path)
            if state.content is not None:
                raise ToolInputError("the file already exists; use '*** Update File:' to change it")
            state.content = "".join(f"{line}\n" for line in op.added)
            return
        state = self.existing(op.path, op.kind.value)
        if op.kind is OpKind.DELETE:
            state.content = None
            return
        text = state.content
        assert text is not None  # Invariant: existing() returned a file that exists.
        for number, hunk in enumerate(op.hunks, start=1):
            try:
                text = _apply_hunk(text, hunk, state.target.shown)
            except ToolInputError as exc:
                raise ToolInputError(f"{_hunk_label(number, hunk)} failed: {exc}") from exc
        state.content = text
        if op.new_path is not None:
            self.move(state, op.new_path, text)


def plan_patch(ops: list[FileOp], policy: JailPolicy, resolve: Callable[[str], Target]) -> PatchPlan:
    """Run ``ops`` in memory (blocking: reads the files) and return the plan, or refuse the whole patch.

    Args:
        ops: the parsed operations.
        policy: the session's sandbox policy (reads go through it).
        resolve: the checked target of a path the patch names (the policy's write check and the write guards).

    Raises:
        PatchRejected: any operation failed (each failure listed with its file and hunk), a secret
            would be overwritten with the redaction marker, or the patch changes nothing.
    """
    planner = _Planner(policy, resolve)
    errors: list[str] = []
    for op in ops:
        try:
            planner.run(op)
        except ToolInputError as exc:
            errors.append(f"{op.path}: {exc}")
    plan = planner.plan
    for state in plan.files.values():
        if state.original.text is not None and state.content is not None:
            try:
                check_no_marker_over_secret(state.original.text, state.content, state.target.shown)
            except ToolInputError as exc:
                errors.append(f"{state.label}: {exc}")
    if errors:
        lines = "\n".join(f"  - {error}" for error in errors)
        raise PatchRejected(f"The patch was not applied (no file was changed):\n{lines}")
    if not any(state.changed for state in plan.files.values()):
        raise PatchRejected("The patch changes nothing (its hunks are context only or already in the files).")
    return plan


def apply_plan(plan: PatchPlan, policy: JailPolicy) -> None:
    """Write a computed plan (blocking): new and changed files first, then deletions, so a move never loses its file.

    Raises:
        ToolInputError: a write failed part-way; says which files were already written.
    """
    done: list[str] = []
    changed = [state for state in plan.files.values() if state.changed]
    ordered = [s for s in changed if s.content is not None] + [s for s in changed if s.content is None]
    for state in ordered:
        target = state.target
        try:
            if state.content is None:
                remove_in_checked_dir(Path(target.host), parent_check(policy, target))
            else:
                mode = 0o666 if state.mode is None else state.mode
                data = state.content.encode("utf-8")
                atomic_write(Path(target.host), data, new_file_mode=mode, check_dir=parent_check(policy, target))
        except OSError as exc:
            written = ", ".join(done) if done else "none"
            raise ToolInputError(
                f"The patch stopped part-way: changing {target.shown} failed ({exc.strerror or exc}). Already "
                f"changed: {written}; the other files are as they were. Check them with read_file before retrying."
            ) from exc
        done.append(target.shown)


def plan_result(plan: PatchPlan) -> dict[str, Any]:
    """What a plan changed, in Hermes's shape.

    As in Hermes 0.19.0, ``files_modified`` names every file the patch touched (both ends of a move, created
    and deleted files too) and ``resolved_path`` is there when that is one file; ``files_created`` and
    ``files_deleted`` say which of them are new or gone (the two ends of a move are neither).
    """
    moved = {path for move in plan.moves for path in move}
    touched = [shown for shown, state in plan.files.items() if state.changed]
    result: dict[str, Any] = {
        "files_modified": touched,
        "files_created": [s for s in touched if s not in moved and plan.files[s].original.text is None],
        "files_deleted": [s for s in touched if s not in moved and plan.files[s].content is None],
    }
    if len(touched) == 1:
        result["resolved_path"] = touched[0]
    return result
