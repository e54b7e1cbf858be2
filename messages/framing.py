"""Newline-delimited frames over Trio streams, with the codec's size limit and an optional frame deadline."""

from __future__ import annotations

import math

import trio

from messages.codec import DEFAULT_MAX_FRAME_BYTES, FrameBuffer, MessageDecodeError

__all__ = ["FrameReader", "FrameTimeout"]

_READ_SIZE = 65536


class FrameTimeout(MessageDecodeError):
    """The peer started a frame and did not finish it within the reader's frame timeout."""


class FrameReader:
    """Reads whole frames from a Trio receive stream.

    Args:
        stream: where the bytes come from (a socket stream, a pipe).
        max_frame_bytes: the largest frame accepted; a longer one raises
            :class:`messages.codec.FrameTooLarge` once and is skipped.
        frame_timeout: seconds a frame may take from its first byte to its newline
            (infinite by default). Waiting between frames is never timed.
    """

    def __init__(
        self, stream: trio.abc.ReceiveStream, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        frame_timeout: float = math.inf,
    ) -> None:
        self._stream = stream
        self._buffer = FrameBuffer(max_frame_bytes)
        self._ready: list[bytes] = []
        self._frame_timeout = frame_timeout
        # Invariant: while the buffer holds part of a frame (and frames are timed), when its first byte came.
        self._frame_started: float | None = None

    async def receive_frame(self) -> bytes | None:
        """The next frame without its newline, or None once the peer has closed.

        Bytes after the last newline at end of stream are an incomplete frame
        and are dropped.

        Raises:
            FrameTimeout: a started frame was not finished in time.
        """
        while not self._ready:
            data = await self._receive()
            if not data:
                return None
            self._buffer.feed(data)
            # Collect complete frames before raising, so none is lost behind an oversized one.
            frames = self._buffer.frames()
            completed = False
            try:
                for frame in frames:
                    self._ready.append(frame)
                    completed = True
            finally:
                self._note_partial(completed)
        return self._ready.pop(0)

    def take_buffered(self) -> bytes:
        """What was read and not yet returned, as it came (frames with their newlines, then a partial
        one), leaving the reader empty: for a caller going on with the raw stream."""
        ready = b"".join(frame + b"\n" for frame in self._ready)
        self._ready.clear()
        return ready + self._buffer.take()

    async def _receive(self) -> bytes | bytearray:
        if self._frame_started is None:
            return await self._stream.receive_some(_READ_SIZE)
        with trio.move_on_at(self._frame_started + self._frame_timeout):
            return await self._stream.receive_some(_READ_SIZE)
        pending = self._buffer.pending_bytes
        raise FrameTimeout(f"a frame was started ({pending} bytes) but not finished within {self._frame_timeout:g} s")

    def _note_partial(self, completed: bool) -> None:
        if self._frame_timeout == math.inf or not self._buffer.pending_bytes:
            self._frame_started = None
        elif completed or self._frame_started is None:
            # The bytes left over begin a new frame now.
            self._frame_started = trio.current_time()
