"""The rolling output buffer of one background process."""

from __future__ import annotations

from collections import deque

import attrs

__all__ = ["LogSlice", "RollingBuffer"]


@attrs.frozen
class LogSlice:
    """Some lines of a process's retained output, with the totals to page through the rest."""

    text: str
    first_line: int
    """Index (0-based, within the retained output) of the first line returned."""
    lines_returned: int
    total_lines: int
    """Lines currently retained."""
    dropped_chars: int
    """Characters that fell off the front of the buffer since the process started."""


class RollingBuffer:
    """The last ``max_chars`` characters a process printed, with counts of what was dropped.

    Output arrives as many small chunks, so they are kept as a deque and joined only
    when read: appending costs O(chunk), not O(buffer).

    # Invariant: self._length == sum(map(len, self._chunks)) <= self._max_chars.
    """

    def __init__(self, max_chars: int) -> None:
        self._max_chars = max_chars
        self._chunks: deque[str] = deque()
        self._length = 0
        self.total_chars = 0
        """Characters ever appended."""

    @property
    def dropped_chars(self) -> int:
        """Characters no longer retained."""
        return self.total_chars - self._length

    def append(self, text: str) -> None:
        """Add ``text`` at the end, dropping the oldest characters beyond the limit."""
        if not text:
            return
        self.total_chars += len(text)
        if len(text) >= self._max_chars:
            self._chunks = deque([text[-self._max_chars :]])
            self._length = self._max_chars
            return
        self._chunks.append(text)
        self._length += len(text)
        while self._length > self._max_chars:
            excess = self._length - self._max_chars
            first = self._chunks[0]
            if len(first) <= excess:
                self._chunks.popleft()
                self._length -= len(first)
            else:
                self._chunks[0] = first[excess:]
                self._length -= excess

    def text(self) -> str:
        """Everything retained."""
        if len(self._chunks) > 1:
            self._chunks = deque(["".join(self._chunks)])
        return self._chunks[0] if self._chunks else ""

    def tail(self, chars: int) -> str:
        """The last ``chars`` characters retained."""
        return self.text()[-chars:] if chars > 0 else ""

    def lines(self, offset: int | None, limit: int) -> LogSlice:
        """Lines ``offset .. offset+limit`` of the retained output; the last ``limit`` lines when offset is None."""
        lines = self.text().splitlines()
        total = len(lines)
        start = max(0, total - limit) if offset is None else min(max(0, offset), total)
        chosen = lines[start : start + limit]
        return LogSlice(
            text="\n".join(chosen),
            first_line=start,
            lines_returned=len(chosen),
            total_lines=total,
            dropped_chars=self.dropped_chars,
        )
