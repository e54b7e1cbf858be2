"""What one session's model has read and written of each file.

``read_file`` asks it how often the model has read the same region of an unchanged file (a
repeat gets a short answer, then a warning, then a refusal); ``write_file`` and ``patch`` ask
it whether the file changed on disk since the model last saw it. It lives with the session
(``ToolContext.file_reads``) and is not saved: a restored session starts with an empty ledger,
which only means fewer warnings.
"""

from __future__ import annotations

import attrs

__all__ = ["FileReadLedger"]

Region = tuple[int, int | None]
"""A read's first line and line count (None: to the end)."""


@attrs.define
class _FileRecord:
    mtime_ns: int
    regions: dict[Region, int] = attrs.field(factory=dict)


@attrs.define
class FileReadLedger:
    """Per resolved path: the modification time the model last saw, and its reads of each region since."""

    _files: dict[str, _FileRecord] = attrs.field(factory=dict, init=False)

    def note_read(self, path: str, mtime_ns: int, region: Region) -> int:
        """Record a read of ``region`` of ``path`` as it was at ``mtime_ns``.

        Returns:
            How many times in a row this region of the file, unchanged, has now been read (1: the first).
        """
        record = self._files.get(path)
        if record is None or record.mtime_ns != mtime_ns:
            record = self._files[path] = _FileRecord(mtime_ns)
        record.regions[region] = record.regions.get(region, 0) + 1
        return record.regions[region]

    def note_write(self, path: str, mtime_ns: int) -> None:
        """Record the model's own write: the file as written is what it has seen; earlier reads no longer count."""
        self._files[path] = _FileRecord(mtime_ns)

    def seen_mtime(self, path: str) -> int | None:
        """The modification time ``path`` had when the model last read or wrote it (None: never)."""
        record = self._files.get(path)
        return None if record is None else record.mtime_ns

    def forget_reads(self) -> None:
        """Drop the read counts (the context that held the reads was compressed away), keeping what was seen."""
        for record in self._files.values():
            record.regions.clear()
