"""Bounded capture of the child's stdout and stderr: keep the head and a rolling tail, count the rest."""

from __future__ import annotations

from collections import deque

import trio

HEAD_FRACTION = 0.4
_READ_SIZE = 1 << 16


class HeadTailBuffer:
    """Keeps the first 40 % and the last 60 % of ``limit`` bytes of a stream, however long it gets.

    Memory stays O(limit) whatever is written: bytes past the head go to a tail that drops its oldest
    chunks once it holds more than its share.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._head_limit = int(limit * HEAD_FRACTION)
        self._tail_limit = limit - self._head_limit
        self._head = bytearray()
        self._tail: deque[bytes] = deque()
        # Invariant: _tail_size == sum(map(len, _tail)), and it exceeds _tail_limit by less than one chunk.
        self._tail_size = 0
        self.total = 0

    def write(self, data: bytes) -> None:
        """Append ``data`` to the captured stream."""
        self.total += len(data)
        room = self._head_limit - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        if not data:
            return
        if len(data) > self._tail_limit:
            data = data[-self._tail_limit :]
        self._tail.append(data)
        self._tail_size += len(data)
        while self._tail_size - len(self._tail[0]) >= self._tail_limit:
            self._tail_size -= len(self._tail.popleft())

    @property
    def omitted(self) -> int:
        """Bytes written but not kept."""
        return max(0, self.total - self.limit)

    @property
    def truncated(self) -> bool:
        """Whether some of the stream was dropped."""
        return self.total > self.limit

    def text(self) -> str:
        """The kept bytes decoded as UTF-8, with a notice where the middle was dropped."""
        tail = b"".join(self._tail)
        if not self.truncated:
            return (bytes(self._head) + tail).decode("utf-8", errors="replace")
        tail = tail[-self._tail_limit :]
        notice = f"\n\n[OUTPUT TRUNCATED - {self.omitted} bytes omitted out of {self.total} total]\n\n"
        head = bytes(self._head).decode("utf-8", errors="ignore")
        return head + notice + tail.decode("utf-8", errors="ignore")


async def drain(stream: trio.abc.ReceiveStream, sink: HeadTailBuffer) -> None:
    """Read ``stream`` to EOF into ``sink``, so the writer never blocks on a full pipe."""
    while chunk := await stream.receive_some(_READ_SIZE):
        sink.write(chunk)
