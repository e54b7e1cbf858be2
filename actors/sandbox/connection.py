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
    it. Whoever is told that bytes are left must see them written with :meth:`drain`; a thread that
    was told so asks :meth:`claim_drain` whether it is the one to start it, and may wait with
    :meth:`wait_for_room` until the queue is short again.
    """

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._lock = threading.Lock()
        # Invariant: bytes accepted but not yet written, in the order they were offered.
        self._queued = bytearray()
        self._drain_lock = trio.StrictFIFOLock()
        # Notified whenever queued bytes are written and when the outbox is closed.
        self._written = threading.Condition(self._lock)
        self._closed = False
        # Invariant: True from a successful claim_drain until a flush leaves nothing queued.
        self._drain_claimed = False

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
            OSError: the peer is gone (the outbox is closed then).
        """
        async with self._drain_lock:
            try:
                while not self._flush():
                    await trio.lowlevel.wait_writable(self._sock)
            except OSError:
                self.close()
                raise

    def claim_drain(self) -> bool:
        """Whether a thread told that bytes are left must start a :meth:`drain`: False when one is
        already on its way (or nothing is left), so a backlog gets one drain, not one per frame."""
        with self._lock:
            if self._drain_claimed or not self._queued:
                return False
            self._drain_claimed = True
            return True

    def wait_for_room(self, limit: int) -> None:
        """Block the calling thread while more than ``limit`` bytes are queued, or until :meth:`close`."""
        with self._lock:
            while len(self._queued) > limit and not self._closed:
                self._written.wait()

    def close(self) -> None:
        """Release every thread in :meth:`wait_for_room`, now and later: the connection is ending."""
        with self._lock:
            self._closed = True
            self._written.notify_all()

    @property
    def queued_bytes(self) -> int:
        """Bytes accepted but not yet written."""
        return len(self._queued)

    def _flush(self) -> bool:
        with self._lock:
            if self._queued:
                del self._queued[: self._send(self._queued)]
                self._written.notify_all()
            if self._queued:
                return False
            self._drain_claimed = False
            return True

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
