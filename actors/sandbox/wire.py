"""Reading and writing one RPC connection on the event loop with one scheduler pass per round trip.

A script's call is a round trip on a Unix socket; a refused call is nothing but that round trip. Through
``SocketStream.receive_some`` and ``send_all`` it costs three passes of Trio's scheduler (each read and each
write ends with a checkpoint, and each pass polls epoll): measured, a refused call took three times as
long as the same loop reading and writing the stream's descriptor directly. So :class:`Wire` does that:
a read or a write that can be done now is done now, and the task waits (``wait_readable`` /
``wait_writable``) only when the socket has nothing to read or no room. The stream keeps owning the
socket: it was accepted, authenticated and is closed as a :class:`trio.SocketStream`.
(docs/DECISIONS.md#d-sandbox-rpc-actor)
"""

from __future__ import annotations

import os

import trio

#: Frames taken without waiting before the reading task lets others run (a script that pipelines
#: requests as fast as it can must not hold the event loop).
FRAMES_BETWEEN_CHECKPOINTS = 16
_READ_SIZE = 65536


class WireClosed(Exception):
    """The peer is gone: a write found the connection broken."""


class Wire:
    """Non-blocking reads and whole-frame writes on a connected stream's socket.

    One task reads; any number write, each frame whole and in the order they started writing.

    Args:
        stream: The connection (its socket is non-blocking, as Trio makes every socket).
    """

    def __init__(self, stream: trio.SocketStream) -> None:
        self._socket = stream.socket
        self._fd = stream.socket.fileno()
        # Held by a writer that could not write its whole frame at once, until it has.
        self._writing = trio.StrictFIFOLock()
        self._unyielded = 0
        # Whether the last read took all there was: a script waiting for its answer sends nothing more
        # until it has it, so the next read would find nothing; waiting first saves that read.
        self._drained = False

    async def receive(self) -> bytes:
        """The next bytes the peer sent; empty at the end of the stream (a reset connection ends it too)."""
        while True:
            if self._drained:
                self._unyielded = 0
                await trio.lowlevel.wait_readable(self._socket)
            try:
                data = os.read(self._fd, _READ_SIZE)
            except BlockingIOError:
                self._drained = True
                continue
            except OSError:
                return b""
            self._drained = len(data) < _READ_SIZE
            self._unyielded += 1
            if self._unyielded >= FRAMES_BETWEEN_CHECKPOINTS:
                self._unyielded = 0
                await trio.lowlevel.checkpoint()
            return data

    async def send(self, frame: bytes) -> None:
        """Write ``frame`` whole after every frame whose writing started before it.

        Raises:
            WireClosed: the peer is gone.
        """
        writing = self._writing
        if writing.locked():
            sent = 0
            await writing.acquire()
        else:
            sent = self._write(frame)
            if sent == len(frame):
                return
            # No await since the lock was seen free: the rest goes out before any later frame.
            writing.acquire_nowait()
        try:
            view = memoryview(frame)
            while sent < len(frame):
                await trio.lowlevel.wait_writable(self._socket)
                sent += self._write(view[sent:])
        finally:
            writing.release()

    def _write(self, data: bytes | memoryview) -> int:
        try:
            return os.write(self._fd, data)
        except BlockingIOError:
            return 0
        except OSError as exc:
            raise WireClosed(str(exc)) from exc
