"""One RPC connection once its token is checked: read in a worker thread, written from either side.

A script's call is a round trip on a Unix socket, and a refused call is nothing but that round trip.
Served from the event loop it costs an epoll wake-up, a scheduler pass, a read that finds nothing and
a re-arm: about five times a blocking read in a thread. So after the handshake the socket is put in
blocking mode and a worker thread reads it; the server answers what it can answer at once from that
thread and hands admitted calls to Trio. Writes never block (``MSG_DONTWAIT``) and go through one
:class:`Outbox`, so frames from the thread and from Trio tasks never interleave.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import trio

from messages.codec import FrameBuffer, FrameTooLarge

_READ_SIZE = 65536


class Outbox:
    """The write side of a connection, shared by its reader thread and its Trio tasks.

    Each frame is written whole and in order: a writer that finds earlier bytes still queued queues
    its own behind them. The lock is held only around non-blocking sends, so the event loop may take
    it. Whoever is told that bytes are left must see them written with :meth:`drain`.
    """

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._lock = threading.Lock()
        # Invariant: bytes accepted but not yet written, in the order they were offered.
        self._queued = bytearray()
        self._drain_lock = trio.StrictFIFOLock()

    def offer(self, data: bytes) -> bool:
        """Write ``data`` now if nothing is queued before it, else queue it; True when all is written.

        Raises:
            OSError: the peer is gone.
        """
        with self._lock:
            if self._queued:
                self._queued += data
                return False
            sent = self._send(data)
            if sent < len(data):
                self._queued += data[sent:]
                return False
            return True

    async def send(self, data: bytes) -> None:
        """Write ``data`` after everything offered before it, waiting for room when the socket is full.

        Raises:
            OSError: the peer is gone.
        """
        if not self.offer(data):
            await self.drain()

    async def drain(self) -> None:
        """Wait until every queued byte is written.

        Raises:
            OSError: the peer is gone.
        """
        async with self._drain_lock:
            while not self._flush():
                await trio.lowlevel.wait_writable(self._sock)

    def _flush(self) -> bool:
        with self._lock:
            if self._queued:
                del self._queued[: self._send(self._queued)]
            return not self._queued

    def _send(self, data: bytes | bytearray) -> int:
        try:
            return self._sock.send(data, socket.MSG_DONTWAIT)
        except BlockingIOError:
            return 0


def blocking_frames(sock: socket.socket, max_frame_bytes: int) -> Iterator[bytes | FrameTooLarge]:
    """Each frame read from ``sock`` (blocking), or the error of an oversized one, until end of stream.

    Runs in a worker thread; :func:`wake_reader` ends it from another thread. A reset connection
    ends it like a close.
    """
    buffer = FrameBuffer(max_frame_bytes)
    while True:
        try:
            data = sock.recv(_READ_SIZE)
        except OSError:
            return
        if not data:
            return
        frame = buffer.sole_frame(data)
        if frame is not None:
            yield frame
            continue
        buffer.feed(data)
        while True:
            try:
                yield from buffer.frames()
            except FrameTooLarge as exc:
                yield exc
                continue
            break


def wake_reader(sock: socket.socket) -> None:
    """Make a :func:`blocking_frames` loop blocked on ``sock`` see the end of the stream.

    Shutting down the read side wakes a blocked ``recv`` without closing the descriptor, so the
    number cannot be reused under the thread; writes still work.
    """
    try:
        sock.shutdown(socket.SHUT_RD)
    except OSError:
        pass  # Already disconnected: the reader has seen the end or will.
