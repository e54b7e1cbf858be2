"""Bounded, curated memory: MEMORY.md (the agent's notes) and USER.md (the user profile).

Both live under ``HERMES_ACTORS_HOME/memories`` as entries joined by a line
holding only ``§``.  They are small on purpose (2,200 and 1,375 characters by
default): the whole of both is shown in every session's system prompt, and
the model itself consolidates when a store is full.  Writes are atomic and
serialised across sessions and processes by an ``fcntl`` lock on a 0600 lock
file; every change runs in a worker thread.  Content is scanned for prompt
injection and exfiltration before it is stored.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

import attrs
import trio

from config.tools import MemoryConfig
from tools.errors import ToolInputError
from tools.files import atomic_write
from tools.results import ToolResult
from tools.threats import find_threats

if TYPE_CHECKING:
    from tools.context import ToolContext
    from tools.registry import Handler

__all__ = [
    "DUPLICATE_MESSAGE",
    "ENTRY_SEPARATOR",
    "MEMORY_SCHEMA",
    "MemoryFull",
    "MemoryOperation",
    "MemorySnapshot",
    "MemoryStore",
    "Target",
    "make_memory_handler",
    "memory_prompt_block",
    "usage_indicator",
]

Target = Literal["memory", "user"]

ENTRY_SEPARATOR: Final = "\n§\n"
#: What an ``add`` of an entry the store already holds answers: nothing was changed.
DUPLICATE_MESSAGE: Final = "Entry already exists (no duplicate added)."
_FILES: Final[dict[str, str]] = {"memory": "MEMORY.md", "user": "USER.md"}
_TITLES: Final[dict[str, str]] = {"memory": "MEMORY (your personal notes)", "user": "USER PROFILE (who the user is)"}
_RULE: Final = "═" * 46


def usage_indicator(used: int, limit: int) -> str:
    """The usage badge shown with a store, e.g. ``[68% — 1,496/2,200 chars]``."""
    percent = int(used * 100 / limit) if limit else 100
    return f"[{percent}% — {used:,}/{limit:,} chars]"


@attrs.frozen
class MemorySnapshot:
    """The entries of one store and its limit."""

    target: str
    entries: tuple[str, ...]
    limit: int

    @property
    def used(self) -> int:
        """Characters the stored text takes (entries plus separators)."""
        return len(ENTRY_SEPARATOR.join(self.entries))

    @property
    def usage(self) -> str:
        """The usage indicator for this store."""
        return usage_indicator(self.used, self.limit)

    def to_dict(self) -> dict[str, Any]:
        """Plain data for a tool result."""
        return {"target": self.target, "entries": list(self.entries), "usage": self.usage}


def _parse(text: str) -> list[str]:
    return [entry.strip() for entry in text.split(ENTRY_SEPARATOR) if entry.strip()]


@attrs.frozen
class MemoryOperation:
    """One change to a store: ``add`` (content), ``replace`` (old_text, content) or ``remove`` (old_text)."""

    action: str
    content: str = ""
    old_text: str = ""


class MemoryFull(ToolInputError):
    """The store would exceed its character limit; the result shows its entries and usage so the model can consolidate."""


class MemoryStore:
    """The two memory files of one HERMES_ACTORS_HOME.

    Safe to share between sessions and between processes: every operation
    takes an exclusive lock on ``memories/.lock`` for its read-modify-write.

    Args:
        home: HERMES_ACTORS_HOME.
        config: which stores are enabled and their limits.
    """

    def __init__(self, home: Path, config: MemoryConfig | None = None) -> None:
        self.directory = home / "memories"
        self.config = config if config is not None else MemoryConfig()

    def limit(self, target: Target) -> int:
        """Character limit of ``target``."""
        return self.config.memory_char_limit if target == "memory" else self.config.user_char_limit

    def enabled(self, target: Target) -> bool:
        """Whether ``target`` is enabled by the configuration."""
        return self.config.memory_enabled if target == "memory" else self.config.user_profile_enabled

    async def read(self, target: Target) -> MemorySnapshot:
        """The current entries of ``target``."""
        snapshot, _ = await self._apply(target, lambda entries: (entries, None), write=False)
        return snapshot

    def read_blocking(self, target: Target) -> MemorySnapshot:
        """The current entries of ``target``, read on the calling thread (a worker thread, or the CLI)."""
        # No lock: every write replaces the file whole (atomic_write), so a read sees one version.
        return MemorySnapshot(target, tuple(self._entries(target)), self.limit(target))

    async def add(self, target: Target, content: str) -> tuple[MemorySnapshot, str]:
        """Append an entry; an exact duplicate is not added twice.

        Raises:
            ToolInputError: empty or blocked content, or the store would exceed its limit (:class:`MemoryFull`).
        """
        return await self.apply(target, [MemoryOperation("add", content=content)])

    async def replace(self, target: Target, old_text: str, new_content: str) -> tuple[MemorySnapshot, str]:
        """Replace the entry identified by ``old_text`` with ``new_content``.

        Raises:
            ToolInputError: blocked or empty content, no or several matching entries, or over the limit.
        """
        return await self.apply(target, [MemoryOperation("replace", content=new_content, old_text=old_text)])

    async def remove(self, target: Target, old_text: str) -> tuple[MemorySnapshot, str]:
        """Remove the entry identified by ``old_text``.

        Raises:
            ToolInputError: no or several matching entries.
        """
        return await self.apply(target, [MemoryOperation("remove", old_text=old_text)])

    async def apply(self, target: Target, operations: Sequence[MemoryOperation]) -> tuple[MemorySnapshot, str]:
        """Apply ``operations`` to ``target`` together: all of them or, on any error, none.

        The limit is checked on the final result only, so one call can free room and add an entry.

        Raises:
            ToolInputError: an operation is malformed, blocked or matches nothing (in a batch the message
                names it); :class:`MemoryFull` when the result would not fit.
        """
        if not operations:
            raise ToolInputError("operations is empty; give at least one {action, content?, old_text?}.")
        batch = len(operations) > 1
        cleaned = [_checked(op, index, batch) for index, op in enumerate(operations, 1)]

        def change(entries: list[str]) -> tuple[list[str], str | None]:
            working = list(entries)
            message = None
            for index, op in enumerate(cleaned, 1):
                try:
                    working, message = _apply_one(target, working, op)
                except ToolInputError as exc:
                    raise _in_batch(exc, index, op.action) if batch else exc
            return working, f"Applied {len(cleaned)} operations." if batch else message

        return await self._change(target, change)

    async def _change(
        self, target: Target, change: Callable[[list[str]], tuple[list[str], str | None]]
    ) -> tuple[MemorySnapshot, str]:
        def checked(entries: list[str]) -> tuple[list[str], str | None]:
            updated, message = change(entries)
            used = len(ENTRY_SEPARATOR.join(updated))
            limit = self.limit(target)
            current = MemorySnapshot(target, tuple(entries), limit)
            # Only growth is refused: shrinking a store that is over its limit must stay possible.
            if used > limit and used > current.used:
                raise MemoryFull(
                    f"{_FILES[target]} would hold {used:,} of {limit:,} chars; it is at "
                    f"{current.used:,}/{limit:,} chars now. Consolidate in one call: an 'operations' batch that "
                    "removes or shortens stale entries (see current_entries) and adds the new one; the limit "
                    "applies to the final result.",
                    current_entries=list(entries), usage=current.usage,
                )
            return updated, message

        snapshot, message = await self._apply(target, checked, write=True)
        return snapshot, message or ""

    async def _apply(
        self, target: Target, change: Callable[[list[str]], tuple[list[str], str | None]], *, write: bool
    ) -> tuple[MemorySnapshot, str | None]:
        if not self.enabled(target):
            raise ToolInputError(f"The {target} store is disabled in the configuration.")
        return await trio.to_thread.run_sync(self._locked, target, change, write)

    def _locked(
        self, target: Target, change: Callable[[list[str]], tuple[list[str], str | None]], write: bool
    ) -> tuple[MemorySnapshot, str | None]:
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        lock_fd = os.open(self.directory / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX)
            entries = self._entries(target)
            updated, message = change(entries)
            if write and updated != entries:
                path = self.directory / _FILES[target]
                atomic_write(path, ENTRY_SEPARATOR.join(updated).encode("utf-8"), new_file_mode=0o600)
            return MemorySnapshot(target, tuple(updated), self.limit(target)), message
        finally:
            os.close(lock_fd)  # closing the descriptor releases the lock

    def _entries(self, target: Target) -> list[str]:
        """The entries of one store as its file holds them now (none when it does not exist)."""
        try:
            return _parse((self.directory / _FILES[target]).read_text(encoding="utf-8"))
        except FileNotFoundError:
            return []

    async def prompt_block(self) -> str:
        """The system-prompt block showing both stores (empty string when there is nothing to show)."""
        return await trio.to_thread.run_sync(self.prompt_block_blocking)

    def prompt_block_blocking(self) -> str:
        """:meth:`prompt_block`, reading the files on the calling thread (call it from a worker thread)."""
        sections = []
        for target in ("memory", "user"):
            if not self.enabled(target):
                continue
            snapshot = self.read_blocking(target)
            if not snapshot.entries:
                continue
            sections.append(
                f"{_RULE}\n{_TITLES[target]} {snapshot.usage}\n{_RULE}\n" + ENTRY_SEPARATOR.join(snapshot.entries)
            )
        return "\n\n".join(sections)


def _checked(op: MemoryOperation, index: int, batch: bool) -> MemoryOperation:
    """``op`` with its content cleaned and checked, before anything is read or written."""
    try:
        if op.action not in ("add", "replace", "remove"):
            raise ToolInputError(f"unknown action {op.action!r}; use add, replace or remove.")
        for name in {"add": ("content",), "replace": ("old_text", "content"), "remove": ("old_text",)}[op.action]:
            if not getattr(op, name).strip():
                raise ToolInputError(f"action={op.action!r} needs '{name}'.")
        if op.action == "remove":
            return op
        return attrs.evolve(op, content=_clean(op.content, "content" if op.action == "add" else "new_content"))
    except ToolInputError as exc:
        raise _in_batch(exc, index, op.action) if batch else exc


def _in_batch(exc: ToolInputError, index: int, action: str) -> ToolInputError:
    """The error of one operation of a batch, naming it and saying that nothing was applied."""
    return ToolInputError(f"Operation {index} ({action}): {exc} No operations were applied (a batch is all or nothing).")


def _apply_one(target: Target, entries: list[str], op: MemoryOperation) -> tuple[list[str], str]:
    """``entries`` after one checked operation, and what it did."""
    if op.action == "add":
        if op.content in entries:
            return entries, DUPLICATE_MESSAGE
        return [*entries, op.content], "Entry added."
    index = _find(target, entries, op.old_text)
    if op.action == "remove":
        return entries[:index] + entries[index + 1 :], "Entry removed."
    updated = list(entries)
    updated[index] = op.content
    # Replacing with an entry that already exists leaves one copy, not two.
    return list(dict.fromkeys(updated)), "Entry replaced."


def _clean(content: str, name: str) -> str:
    content = content.strip()
    if not content:
        raise ToolInputError(f"{name} is empty; to delete an entry use action='remove'.")
    if "\n§\n" in f"\n{content}\n":
        raise ToolInputError(f"{name} must not contain a line holding only '§' (it separates entries).")
    threats = find_threats(content)
    if threats:
        raise ToolInputError(
            f"Blocked: the content matches the threat pattern(s) {', '.join(threats)}. Memory is shown "
            "in every future system prompt, so it must not hold instructions to override rules, commands "
            "that send secrets anywhere, or invisible characters. Store a plain factual note instead."
        )
    return content



def _find(target: Target, entries: list[str], old_text: str) -> int:
    needle = old_text.strip()
    if not needle:
        raise ToolInputError("old_text is empty; give a few words that appear in the entry to change.")
    exact = [i for i, entry in enumerate(entries) if entry == needle]
    if exact:
        return exact[0]
    matches = [i for i, entry in enumerate(entries) if needle in entry]
    if not matches:
        listing = "\n".join(f"- {entry}" for entry in entries) or "(no entries)"
        raise ToolInputError(f"No {target} entry contains {needle!r}. Current entries:\n{listing}")
    if len(matches) > 1:
        listing = "\n".join(f"- {entries[i]}" for i in matches)
        raise ToolInputError(
            f"{len(matches)} {target} entries contain {needle!r}; use a longer, unique piece of the entry "
            f"(or the whole entry). Matches:\n{listing}"
        )
    return matches[0]



async def memory_prompt_block(home: Path, config: MemoryConfig | None = None) -> str:
    """The memory block for a session's system prompt, built once at session start."""
    return await MemoryStore(home, config).prompt_block()


def _schema(config: MemoryConfig) -> dict[str, Any]:
    operation: dict[str, dict[str, Any]] = {
        "action": {"type": "string", "enum": ["add", "replace", "remove"]},
        "content": {"type": "string", "description": "Entry text for add, new text for replace."},
        "old_text": {"type": "string", "description": "A short unique piece of the entry to replace or remove."},
    }
    return {
        "name": "memory",
        "description": (
            "Save durable facts to your persistent memory, shown in your system prompt every session. Two stores: "
            f"target='memory' — your notes (environment facts, project conventions, tool quirks; "
            f"{config.memory_char_limit:,} chars) and target='user' — the user's preferences, style and "
            f"corrections ({config.user_char_limit:,} chars). Make all your changes in one call with 'operations' "
            "(a list of {action, content?, old_text?}): it is applied all or nothing and the limit is checked on "
            "the final result, so one call can remove stale entries and add a new one. The single-change form is "
            "action=add(content) | replace(old_text, content) | remove(old_text). A full store answers with its "
            "entries. Write declarative facts ('User prefers concise answers'), not instructions; never store "
            "secrets; skip task progress and anything stale within a week. One successful call finishes the "
            "update: do not repeat it."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                **{name: dict(spec) for name, spec in operation.items()},
                "target": {"type": "string", "enum": ["memory", "user"], "description": "Which store."},
                "operations": {
                    "type": "array",
                    "items": {"type": "object", "properties": operation, "required": ["action"]},
                    "description": "Several changes applied together, checked against the limit once at the end.",
                },
            },
            "required": ["target"],
        },
    }


MEMORY_SCHEMA: Final[dict[str, Any]] = _schema(MemoryConfig())


def make_memory_handler(config: MemoryConfig | None = None) -> tuple[dict[str, Any], Handler]:
    """The memory tool's schema (stating the configured limits) and its handler.

    The handler uses ``ctx.home`` so every session of a daemon shares one store.
    """
    config = config if config is not None else MemoryConfig()

    async def memory_handler(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Tool handler for ``memory``: one change, or an ``operations`` batch.

        Raises:
            ToolInputError: a missing argument or text that matches nothing; :class:`MemoryFull` when the
                result would not fit (the guardrails count it as a failure).
        """
        store = MemoryStore(ctx.home, config)
        target = args["target"]
        raw = args.get("operations")
        if raw:
            operations = [_operation(item) for item in raw]
        elif args.get("action"):
            operations = [_operation(args)]
        else:
            raise ToolInputError("Give 'action' (one change) or 'operations' (a list of changes).")
        snapshot, message = await store.apply(target, operations)
        return ToolResult({
            "success": True,
            "target": target,
            "message": message,
            "usage": snapshot.usage.strip("[]"),
            "entry_count": len(snapshot.entries),
            "note": "Saved. This update is complete; do not repeat it.",
        })

    return _schema(config), memory_handler


def _operation(item: Any) -> MemoryOperation:
    if not isinstance(item, dict):
        raise ToolInputError("Each operation must be an object {action, content?, old_text?}.")
    return MemoryOperation(
        str(item.get("action") or ""), content=str(item.get("content") or ""), old_text=str(item.get("old_text") or "")
    )
