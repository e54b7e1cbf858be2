"""Capping a command's output while it is read: keep the head and the tail."""

from __future__ import annotations

__all__ = ["HeadTailBuffer"]

# Share of the cap given to the start of the output; the rest keeps the end, where
# errors and summaries usually are.
_HEAD_SHARE = 0.4


class HeadTailBuffer:
    """Bytes of a stream, capped at ``max_bytes``: the first 40 % and the last 60 % are kept.

    # Invariant: len(self._head) + len(self._tail) <= self._max_bytes.
    """

    def __init__(self, max_bytes: int) -> None:
        self._max_bytes = max_bytes
        self._head_cap = int(max_bytes * _HEAD_SHARE)
        self._tail_cap = max_bytes - self._head_cap
        self._head = bytearray()
        self._tail = bytearray()
        self.total_bytes = 0

    @property
    def omitted_bytes(self) -> int:
        """Bytes dropped from the middle."""
        return self.total_bytes - len(self._head) - len(self._tail)

    def append(self, data: bytes) -> None:
        """Add ``data``; the middle of the stream is dropped once the cap is reached."""
        self.total_bytes += len(data)
        room = self._head_cap - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        if not data:
            return
        if len(data) >= self._tail_cap:
            self._tail = bytearray(data[-self._tail_cap :])
            return
        self._tail += data
        excess = len(self._tail) - self._tail_cap
        if excess > 0:
            del self._tail[:excess]

    def render(self) -> str:
        """The kept text with a notice where bytes were omitted (decoding is lenient)."""
        omitted = self.omitted_bytes
        if not omitted:
            return (self._head + self._tail).decode("utf-8", errors="replace")
        # The cut may have split a multi-byte character: drop its orphaned pieces.
        tail = bytes(self._tail).lstrip(bytes(range(0x80, 0xC0)))
        head = self._head.decode("utf-8", errors="ignore")
        notice = f"\n\n[... {omitted:,} bytes of output omitted ...]\n\n"
        return head + notice + tail.decode("utf-8", errors="replace")
