"""``write_file`` and ``patch``: the tools' schemas and handlers.

``patch`` has Hermes Agent's two modes: ``replace`` (one ``old_string`` found through the fuzzy
chain, :mod:`tools.files._fuzzy`) and ``patch`` (a V4A multi-file patch, :mod:`tools.files._v4a`).
Every path obeys the sandbox policy and the write guards (:mod:`tools.files._write_guards`);
writes are atomic; results carry Hermes's fields: a diff, ``files_modified`` (for V4A every file
touched, with ``files_created`` / ``files_deleted``), ``resolved_path`` when one file was, a ``lint``
report, and ``_warning`` when a file changed on disk since the model last saw it. The ledger learns each file the model wrote.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import trio

from tools.errors import ToolInputError
from tools.files._atomic import atomic_write
from tools.files._fuzzy import already_applied, fuzzy_replace
from tools.files._guard import Target, parent_check, write_target
from tools.files._markers import check_no_marker_over_secret
from tools.files._textio import cap_diff, read_editable, read_loosely, unified_diff, uses_crlf, written_mtime
from tools.files._v4a import parse_patch
from tools.files._v4a_apply import PatchPlan, apply_plan, plan_patch, plan_result
from tools.files._write_guards import has_linter, lint_report, refuse_sensitive, stale_warning
from tools.files.ledger import FileReadLedger
from tools.jail.policy import JailPolicy
from tools.redact import REDACTED
from tools.results import ToolResult

if TYPE_CHECKING:
    from tools.context import ToolContext

__all__ = [
    "PATCH_SCHEMA", "WRITE_FILE_SCHEMA", "check_patch_args", "check_write_file_args", "patch_handler", "write_file_handler",
]

WRITE_FILE_SCHEMA: Final[dict[str, Any]] = {
    "name": "write_file",
    "description": (
        "Write a text file, replacing it entirely (parent directories are created); use it instead of echo "
        "or a cat heredoc in the terminal. The write is "
        "atomic: readers see the old or the new content, never a mix. Python, JSON, YAML and TOML "
        "files are syntax-checked after writing (the result's lint). To change part of a file, use patch."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Path of the file to write (created or overwritten)."},
            "content": {"type": "string", "description": "The complete new content."},
            "cross_profile": {
                "type": "boolean",
                "description": "Hermes's opt-out of its guard on other profiles' files; this daemon has one profile, so it changes nothing.",
                "default": False,
            },
        },
        "required": ["path", "content"],
    },
}

PATCH_SCHEMA: Final[dict[str, Any]] = {
    "name": "patch",
    "description": (
        "Edit files in place and get a unified diff back; use it instead of sed or awk.\n"
        "mode='replace' (default; pass it): replace old_string by new_string in path. old_string is found even "
        "when whitespace, indentation, escapes or typographic quotes differ a little (the result's strategy "
        "says how it matched); it must match one place unless replace_all is true.\n"
        "mode='patch': apply a V4A patch to one or more files (update, add, delete, move); nothing is "
        "written unless every part applies. Python, JSON, YAML and TOML files are syntax-checked after."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "mode": {
                "type": "string",
                "enum": ["replace", "patch"],
                "description": "'replace' for one find-and-replace, 'patch' for a V4A patch.",
                "default": "replace",
            },
            "path": {"type": "string", "description": "The file to edit (mode='replace')."},
            "old_string": {
                "type": "string",
                "description": (
                    "The text to find (mode='replace'); include enough surrounding lines to make it unique."
                ),
            },
            "new_string": {
                "type": "string",
                "description": "The replacement (mode='replace'); an empty string deletes the text found.",
            },
            "replace_all": {
                "type": "boolean",
                "description": "Replace every occurrence instead of requiring one (default false).",
                "default": False,
            },
            "cross_profile": {
                "type": "boolean",
                "description": "Hermes's opt-out of its guard on other profiles' files; this daemon has one profile, so it changes nothing.",
                "default": False,
            },
            "patch": {
                "type": "string",
                "description": (
                    "The V4A patch (mode='patch'):\n*** Begin Patch\n*** Update File: path/to/file\n"
                    "@@ a line near the change @@\n context line\n-removed line\n+added line\n"
                    "*** Add File: new.txt\n+its lines\n*** Delete File: old.txt\n*** End Patch"
                ),
            },
        },
        "required": ["mode"],
    },
}


def _checked(ctx: ToolContext, raw: str) -> Target:
    """The target of a write of ``raw``: the sandbox policy's check, then the write guards (blocking)."""
    target = write_target(ctx, raw)
    refuse_sensitive(ctx.home, target)
    return target


def _write(policy: JailPolicy, ledger: FileReadLedger, target: Target, content: str) -> dict[str, Any]:
    """Write ``content`` to a checked target (blocking) and return Hermes's write result."""
    shown = target.shown
    data = content.encode("utf-8")
    warning = stale_warning(ledger, target)
    try:
        if os.path.isdir(target.host):
            raise ToolInputError(f"{shown} is a directory; give a file path.")
        # A CRLF file rewritten from a model's LF text keeps its line endings, as in Hermes.
        if "\n" in content and "\r\n" not in content and uses_crlf(policy, target):
            content = content.replace("\n", "\r\n")
            data = content.encode("utf-8")
        # The old text is read only where it is needed: the marker check, or telling old lint errors from new.
        before = read_loosely(policy, target) if REDACTED in content or has_linter(shown) else None
        if REDACTED in content and before is not None:
            check_no_marker_over_secret(before, content, shown)
        dirs_created = not os.path.isdir(os.path.dirname(target.host))
        created = atomic_write(Path(target.host), data, check_dir=parent_check(policy, target))
    except PermissionError:
        raise ToolInputError(f"Permission denied writing {shown}.") from None
    except OSError as exc:
        raise ToolInputError(f"Cannot write {shown}: {exc.strerror or exc}.") from exc
    result: dict[str, Any] = {"bytes_written": len(data), "dirs_created": dirs_created, "created": created}
    lint = lint_report(shown, before, content)
    if lint is not None:
        result["lint"] = lint
    result |= {"resolved_path": shown, "files_modified": [shown]}
    if warning:
        result["_warning"] = warning
    return result


def _replace(
    policy: JailPolicy, ledger: FileReadLedger, target: Target, label: str, old: str, new: str, replace_all: bool
) -> dict[str, Any]:
    """Replace ``old`` by ``new`` in a checked target (blocking) and return Hermes's patch result.

    Raises:
        ToolInputError: a missing, binary or non-UTF-8 file, an empty ``old_string``, no match, an
            ambiguous one, or a secret the edit would overwrite with the redaction marker.
    """
    shown = target.shown
    text = read_editable(policy, target, " Use write_file to create a new file.").text
    assert text is not None  # Invariant: a missing file raised.
    # A re-sent edit that is already in the file is answered as done, as in Hermes, so the model moves on.
    done = {"success": True, "no_change": True, "note": f"{shown} already holds new_string; nothing was written."}
    if old == new:
        if already_applied(text, old, new):
            return done
        raise ToolInputError("old_string and new_string are identical; there is nothing to change.")
    warning = stale_warning(ledger, target)
    try:
        edit = fuzzy_replace(text, old, new, replace_all, shown)
    except ToolInputError:
        if already_applied(text, old, new):
            return done
        raise
    check_no_marker_over_secret(text, edit.text, shown)
    try:
        atomic_write(Path(target.host), edit.text.encode("utf-8"), check_dir=parent_check(policy, target))
    except OSError as exc:
        raise ToolInputError(f"Cannot write {shown}: {exc.strerror or exc}.") from exc
    result: dict[str, Any] = {
        "success": True,
        "diff": cap_diff(unified_diff(label, text, edit.text)),
        "files_modified": [shown],
        "strategy": edit.strategy,
        "replacements": edit.count,
    }
    lint = lint_report(shown, text, edit.text)
    if lint is not None:
        result["lint"] = lint
    result["resolved_path"] = shown
    if warning:
        result["_warning"] = warning
    return result


def _apply_v4a(ctx: ToolContext, text: str) -> tuple[dict[str, Any], PatchPlan]:
    """Parse, plan and write a V4A patch (blocking); the result and the plan written."""
    policy = ctx.jail.policy
    plan = plan_patch(parse_patch(text), policy, lambda raw: _checked(ctx, raw))
    seen = [s.target for s in plan.files.values() if s.original.text is not None]
    warnings = [warning for target in seen if (warning := stale_warning(ctx.file_reads, target))]
    apply_plan(plan, policy)
    changed = [state for state in plan.files.values() if state.changed]
    diff = "".join(unified_diff(s.label, s.original.text, s.content) for s in changed)
    result: dict[str, Any] = {"success": True, "diff": cap_diff(diff)}
    result |= {key: paths for key, paths in plan_result(plan).items() if paths}
    lint = {
        s.target.shown: report
        for s in changed
        if s.content is not None and (report := lint_report(s.target.shown, s.original.text, s.content)) is not None
    }
    if lint:
        result["lint"] = lint
    if warnings:
        result["_warning"] = " | ".join(warnings)
    return result, plan


def _required(args: Mapping[str, Any], mode: str, names: tuple[str, ...]) -> None:
    missing = [name for name in names if not isinstance(args.get(name), str)]
    if missing:
        raise ToolInputError(f"mode='{mode}' needs {', '.join(names)}; missing: {', '.join(missing)}.")


def check_write_file_args(args: Mapping[str, Any]) -> None:
    """write_file's own check of arguments its schema passed (the registry's ``check_args``).

    Raises:
        ToolInputError: the path is empty.
    """
    if not args["path"]:
        # As Hermes: an empty path is a dropped argument, not the working directory; said before any work.
        raise ToolInputError("write_file: missing required field 'path'. Re-emit the tool call with both 'path' and 'content' set.")


def check_patch_args(args: Mapping[str, Any]) -> None:
    """patch's own check of arguments its schema passed (the registry's ``check_args``).

    Raises:
        ToolInputError: an argument the mode needs is missing.
    """
    if args.get("mode", "replace") == "patch":
        _required(args, "patch", ("patch",))
    else:
        _required(args, "replace", ("path", "old_string", "new_string"))


async def write_file_handler(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    """Tool handler for ``write_file``: the policy's check and the write guards, then an atomic write.

    Raises:
        ToolInputError: the path is empty, refused, a directory or not writable.
    """
    check_write_file_args(args)

    def write() -> tuple[dict[str, Any], Written]:
        target = _checked(ctx, args["path"])
        result = _write(ctx.jail.policy, ctx.file_reads, target, args["content"])
        return result, _mtimes([target])

    result, written = await trio.to_thread.run_sync(write)
    _note_written(ctx, written)
    return ToolResult(result)


async def patch_handler(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    """Tool handler for ``patch``: a fuzzy find-and-replace (``mode='replace'``) or a V4A patch (``mode='patch'``).

    Raises:
        ToolInputError: a missing argument for the mode, a refused path, or the edit's own errors
            (see :func:`tools.files._fuzzy.fuzzy_replace` and :func:`tools.files._v4a_apply.plan_patch`).
    """
    check_patch_args(args)
    if args.get("mode", "replace") == "patch":

        def run_patch() -> tuple[dict[str, Any], Written]:
            result, plan = _apply_v4a(ctx, args["patch"])
            return result, _mtimes([s.target for s in plan.files.values() if s.changed and s.content is not None])

        result, written = await trio.to_thread.run_sync(run_patch)
        _note_written(ctx, written)
        return ToolResult(result)
    old, new, replace_all = args["old_string"], args["new_string"], bool(args.get("replace_all", False))

    def run_replace() -> tuple[dict[str, Any], Written]:
        target = _checked(ctx, args["path"])
        result = _replace(ctx.jail.policy, ctx.file_reads, target, args["path"], old, new, replace_all)
        return result, [] if result.get("no_change") else _mtimes([target])

    result, written = await trio.to_thread.run_sync(run_replace)
    _note_written(ctx, written)
    return ToolResult(result)


Written = list[tuple[str, int]]
"""Files just written: (resolved host path, modification time)."""


def _mtimes(targets: list[Target]) -> Written:
    """The modification times of files just written (blocking), for the ledger."""
    return [(target.host, mtime) for target in targets if (mtime := written_mtime(target)) is not None]


def _note_written(ctx: ToolContext, written: Written) -> None:
    """Tell the ledger the model has seen these files as just written (so its own edits never look stale)."""
    for host, mtime in written:
        ctx.file_reads.note_write(host, mtime)
