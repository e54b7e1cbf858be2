"""What both search engines feed their hits into: paging, output modes and the result the model sees.

The engines (ripgrep, the Python walk) only find things: lines (matches and context lines, in path
order) or file names. A :class:`Collector` turns that stream into one page of Hermes Agent's result
shape and tells the engine when it has seen enough, so a search stops as soon as the page (and the
fact that more exists) is known. Both engines share it, which is what keeps their answers equal.

Units that ``offset`` and ``limit`` count, as in Hermes: a line (match or context) for
``output_mode='content'``, a file for ``files_only`` and ``count``, a file name for ``target='files'``.
File names are listed newest first (modification time), which needs every name before the first can
be shown: that listing stops at :data:`MAX_FILES_SCANNED` names.
"""

from __future__ import annotations

import os
from typing import Any, Final, Literal

import attrs

from tools.redact import redact_secrets
from tools.results import ToolResult

__all__ = ["MAX_FILES_SCANNED", "MAX_LINE_CHARS", "Collector", "OutputMode", "SearchResult", "Target"]

Target = Literal["content", "files"]
OutputMode = Literal["content", "files_only", "count"]

MAX_LINE_CHARS: Final = 500
MAX_FILES_SCANNED: Final = 100_000


def display(shown_root: str, rel: str) -> str:
    """How a path found under the root is shown: relative to the root as the model wrote it."""
    return rel if shown_root in ("", ".") else os.path.normpath(os.path.join(shown_root, rel))


def cap_line(text: str) -> str:
    """A found line as shown: redacted, then cut to :data:`MAX_LINE_CHARS`."""
    # Redacted before the cut: a secret cut in two would no longer look like one.
    text = redact_secrets(text.rstrip("\r\n"))
    return text if len(text) <= MAX_LINE_CHARS else text[:MAX_LINE_CHARS] + " [...]"


@attrs.frozen
class SearchResult:
    """One page of a search: matches (content), files (files_only, or target='files') or counts (count)."""

    target: Target
    engine: str
    output_mode: OutputMode = "content"
    matches: tuple[dict[str, Any], ...] = ()
    files: tuple[str, ...] = ()
    counts: dict[str, int] = attrs.field(factory=dict)
    total_count: int = 0
    offset: int = 0
    truncated: bool = False
    scan_capped: bool = False

    def tool_result(self) -> ToolResult:
        """The tool result, in Hermes Agent's shape (``total_count`` and one of matches/files/counts)."""
        data: dict[str, Any] = {"total_count": self.total_count}
        if self.target == "files" or self.output_mode == "files_only":
            data["files"] = list(self.files)
        elif self.output_mode == "count":
            data["counts"] = dict(self.counts)
        else:
            data["matches"] = list(self.matches)
        data["truncated"] = self.truncated
        data["engine"] = self.engine
        shown = len(self.files) if "files" in data else len(self.counts) if "counts" in data else len(self.matches)
        if self.truncated:
            data["next_offset"] = self.offset + shown
            data["note"] = (
                f"More results exist: call again with offset={self.offset + shown}, or narrow the pattern, "
                "path or file_glob."
            )
            if self.target == "content":
                data["total_count_is_lower_bound"] = True
        if self.scan_capped:
            data["note"] = (
                f"Only the first {MAX_FILES_SCANNED:,} files found were sorted by modification time; "
                "narrow the path or pattern."
            )
        return ToolResult(data)


@attrs.define
class Collector:
    """Takes an engine's hits in path order and keeps one page of them.

    The ``add_*`` methods return True once the engine may stop: the page is full and one more unit
    was seen (so the result is known to be truncated), or the file-name scan reached its cap.
    """

    target: Target
    output_mode: OutputMode
    offset: int
    limit: int
    shown_root: str
    _units: int = 0
    _lines: list[dict[str, Any]] = attrs.field(factory=list)
    _files: list[str] = attrs.field(factory=list)
    _counts: dict[str, int] = attrs.field(factory=dict)
    _found: list[tuple[str, str]] = attrs.field(factory=list)
    _total_matches: int = 0
    _last_file: str | None = None
    _truncated: bool = False
    _scan_capped: bool = False

    def add_line(self, rel: str, number: int, text: str, *, context: bool = False) -> bool:
        """A matching line (or, with ``context``, a line shown around one) of file ``rel``."""
        if self.output_mode == "content":
            return self._take(lambda: self._lines.append(self._entry(rel, number, text, context)))
        if context:
            return False
        self._total_matches += 1
        if rel == self._last_file:
            if rel in self._counts:
                self._counts[rel] += 1
            return False
        self._last_file = rel
        if self.output_mode == "files_only":
            return self._take(lambda: self._files.append(display(self.shown_root, rel)))
        return self._take(lambda: self._counts.__setitem__(rel, 1))

    def add_name(self, rel: str, host: str) -> bool:
        """A file name that matched (``target='files'``); ``host`` is where to stat it."""
        if len(self._found) == MAX_FILES_SCANNED:
            self._scan_capped = True
            return True
        self._found.append((rel, host))
        return False

    def empty(self) -> bool:
        """Whether nothing at all was found yet."""
        return not (self._units or self._found)

    def result(self, engine: str) -> SearchResult:
        """The page (blocking for ``target='files'``: it stats every name found; run in a thread)."""
        if self.target == "files":
            return self._names(engine)
        if self.output_mode == "count":
            counts = {display(self.shown_root, rel): n for rel, n in self._counts.items()}
            return SearchResult(
                "content", engine, "count", counts=counts, total_count=self._total_matches,
                offset=self.offset, truncated=self._truncated,
            )
        # Every unit seen: the exact total, or (truncated) a lower bound.
        return SearchResult(
            "content", engine, self.output_mode, matches=tuple(self._lines), files=tuple(self._files),
            total_count=self._units, offset=self.offset, truncated=self._truncated,
        )

    def _take(self, keep: Any) -> bool:
        index = self._units
        self._units += 1
        if index >= self.offset + self.limit:
            self._truncated = True
            return True
        if index >= self.offset:
            keep()
        return False

    def _entry(self, rel: str, number: int, text: str, context: bool) -> dict[str, Any]:
        entry: dict[str, Any] = {"path": display(self.shown_root, rel), "line": number, "content": cap_line(text)}
        if context:
            entry["context"] = True
        return entry

    def _names(self, engine: str) -> SearchResult:
        def newest_first(found: tuple[str, str]) -> tuple[int, str]:
            try:
                mtime = os.stat(found[1], follow_symlinks=False).st_mtime_ns
            except OSError:
                mtime = 0
            return -mtime, found[0]

        ordered = sorted(self._found, key=newest_first)
        page = ordered[self.offset : self.offset + self.limit]
        return SearchResult(
            "files", engine, files=tuple(display(self.shown_root, rel) for rel, _ in page),
            total_count=len(ordered), offset=self.offset,
            truncated=len(ordered) > self.offset + self.limit or self._scan_capped, scan_capped=self._scan_capped,
        )
