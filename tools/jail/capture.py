"""Capping a process's output while it is read: keep the head and the tail, count the rest.

The one capture of every tool process (terminal foreground, execute_code stdout and stderr).
"""

from __future__ import annotations

from collections.abc import Callable

import trio

__all__ = ["HEAD_SHARE", "HeadTailBuffer", "drain"]

HEAD_SHARE = 0.4
"""Share of the cap given to the start of the output; the rest keeps the end, where errors and
summaries usually are."""

_READ_SIZE = 65536
# Continuation bytes of UTF-8: a cut may leave some at the start of the tail.
_CONTINUATION = bytes(range(0x80, 0xC0))

Notice = Callable[[int, int], str]
"""Formats the marker put where bytes were dropped, given (omitted bytes, total bytes)."""


def _default_notice(omitted: int, total: int) -> str:
    return f"\n\n[... {omitted:,} bytes of output omitted ...]\n\n"


class HeadTailBuffer:
    """Bytes of a stream, capped at ``max_bytes``: the first 40 % and the last 60 % are kept.

    Args:
        max_bytes: The cap.
        notice: Formats the marker shown where the middle was dropped.

    # Invariant: len(self._head) + len(self._tail) <= self.max_bytes.
    """

    def __init__(self, max_bytes: int, notice: Notice = _default_notice) -> None:
        self.max_bytes = max_bytes
        self._notice = notice
        self._head_cap = int(max_bytes * HEAD_SHARE)
        self._tail_cap = max_bytes - self._head_cap
        self._head = bytearray()
        self._tail = bytearray()
        self.total_bytes = 0

    @property
    def omitted_bytes(self) -> int:
        """Bytes dropped from the middle."""
        return self.total_bytes - len(self._head) - len(self._tail)

    @property
    def truncated(self) -> bool:
        """Whether some of the stream was dropped."""
        return self.omitted_bytes > 0

    def kept(self) -> bytes:
        """The bytes kept, head then tail, without any notice."""
        return bytes(self._head + self._tail)

    def append(self, data: bytes | bytearray) -> None:
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
        """The kept text with the notice where bytes were omitted (decoding is lenient)."""
        omitted = self.omitted_bytes
        if not omitted:
            return (self._head + self._tail).decode("utf-8", errors="replace")
        # The cut may have split a multi-byte character: drop its orphaned pieces.
        tail = bytes(self._tail).lstrip(_CONTINUATION)
        head = self._head.decode("utf-8", errors="ignore")
        return head + self._notice(omitted, self.total_bytes) + tail.decode("utf-8", errors="replace")


async def drain(stream: trio.abc.ReceiveStream, sink: HeadTailBuffer) -> None:
    """Read ``stream`` to its end into ``sink``, so the writer never blocks on a full pipe."""
    try:
        while chunk := await stream.receive_some(_READ_SIZE):
            sink.append(chunk)
    except (trio.ClosedResourceError, trio.BrokenResourceError):
        pass
