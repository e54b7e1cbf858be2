"""What one session's model has read and written of each file.

``read_file`` asks it two things, as Hermes Agent's read tracker does. Has the model already been
given this window of the file as it is now (then a short "unchanged" answer saves the context)? And
how many times in a row has it asked for the same thing, with no other tool in between (the third
time is warned about, the fourth refused: a model in a read loop)? ``search_files`` takes part in
the same loop count. ``write_file`` and ``patch`` ask whether the file changed on disk since the
model last saw it.

It lives with the session (``ToolContext.file_reads``) and is not saved: a restored session starts
with an empty ledger, which only means fewer warnings.
"""

from __future__ import annotations

from collections.abc import Hashable

import attrs

__all__ = ["LOOP_COUNTED_TOOLS", "FileReadLedger", "ReadCount"]

LOOP_COUNTED_TOOLS = frozenset({"read_file", "search_files"})
"""The tools whose repeated calls are counted; a call of any other tool breaks the run."""

Region = tuple[int, int | None]
"""A read's first line and line count (None: to the end)."""


@attrs.frozen
class ReadCount:
    """What the ledger knows of one read when it is recorded.

    Attributes:
        unchanged: the model was already given this window of the file as it is now (since the
            last compression), so its content is in the conversation.
        in_a_row: how many identical calls (this one included) ran with no other tool in between.
    """

    unchanged: bool
    in_a_row: int


@attrs.define
class _FileRecord:
    mtime_ns: int
    regions: set[Region] = attrs.field(factory=set)


@attrs.define
class FileReadLedger:
    """Per resolved path: the modification time the model last saw and the windows it was given; and
    the current run of identical read or search calls."""

    _files: dict[str, _FileRecord] = attrs.field(factory=dict, init=False)
    _last_call: Hashable | None = attrs.field(default=None, init=False)
    _in_a_row: int = attrs.field(default=0, init=False)

    def note_read(self, path: str, mtime_ns: int, region: Region) -> ReadCount:
        """Record that the model was given ``region`` of ``path`` as it was at ``mtime_ns``."""
        record = self._files.get(path)
        if record is None or record.mtime_ns != mtime_ns:
            record = self._files[path] = _FileRecord(mtime_ns)
        unchanged = region in record.regions
        record.regions.add(region)
        return ReadCount(unchanged, self._count(("read", path, mtime_ns, region)))

    def note_search(self, key: Hashable) -> int:
        """Record a ``search_files`` call (``key``: its arguments); how many identical ones ran in a row."""
        return self._count(("search", key))

    def note_tool_call(self, name: str) -> None:
        """Record that tool ``name`` was called: any tool but the counted ones breaks the run."""
        if name not in LOOP_COUNTED_TOOLS:
            self._last_call, self._in_a_row = None, 0

    def note_write(self, path: str, mtime_ns: int) -> None:
        """Record the model's own write: the file as written is what it has seen; earlier reads no longer count."""
        self._files[path] = _FileRecord(mtime_ns)

    def seen_mtime(self, path: str) -> int | None:
        """The modification time ``path`` had when the model last read or wrote it (None: never)."""
        record = self._files.get(path)
        return None if record is None else record.mtime_ns

    def forget_reads(self) -> None:
        """Forget which windows the model was given (the conversation that held them was compressed
        away, so the next read returns content again) and the current run; keep what was seen."""
        for record in self._files.values():
            record.regions.clear()
        self._last_call, self._in_a_row = None, 0

    def _count(self, key: Hashable) -> int:
        if key == self._last_call:
            self._in_a_row += 1
        else:
            self._last_call, self._in_a_row = key, 1
        return self._in_a_row
