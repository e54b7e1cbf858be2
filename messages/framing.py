"""Newline-delimited frames over Trio streams, with the codec's size limit."""

from __future__ import annotations

import trio

from messages.codec import DEFAULT_MAX_FRAME_BYTES, FrameBuffer

__all__ = ["FrameReader"]

_READ_SIZE = 65536


class FrameReader:
    """Reads whole frames from a Trio receive stream.

    Args:
        stream: where the bytes come from (a socket stream, a pipe).
        max_frame_bytes: the largest frame accepted; a longer one raises
            :class:`messages.codec.FrameTooLarge` once and is skipped.
    """

    def __init__(self, stream: trio.abc.ReceiveStream, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> None:
        self._stream = stream
        self._buffer = FrameBuffer(max_frame_bytes)
        self._ready: list[bytes] = []

    async def receive_frame(self) -> bytes | None:
        """The next frame without its newline, or None once the peer has closed.

        Bytes after the last newline at end of stream are an incomplete frame
        and are dropped.
        """
        while not self._ready:
            data = await self._stream.receive_some(_READ_SIZE)
            if not data:
                return None
            self._buffer.feed(data)
            # Collect complete frames before raising, so none is lost behind an oversized one.
            frames = self._buffer.frames()
            while True:
                try:
                    frame = next(frames)
                except StopIteration:
                    break
                self._ready.append(frame)
        return self._ready.pop(0)
