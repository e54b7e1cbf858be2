"""A run of refused calls answered by a thread of the connection's own, off the event loop.

On the event loop each round trip of a refused call is a pass of Trio's scheduler (epoll's wake-up, the
connection task's step, its wait armed again); measured against a thread blocked in ``poll`` that reads,
answers and writes, the pass cost 2.5x the daemon's CPU and 2-4x the script's wait per call. A refusal
needs nothing the session owns: the frame's JSON and the run's allow-list, which does not change during a
run. So once a connection's task has refused :data:`REFUSALS_BEFORE_THREAD` calls in a row, with nothing
else in flight on the connection, it hands the reading to a :class:`RefusalReader` in a worker thread,
which answers refusals until it reads anything else: a call the script may make, a frame that is malformed,
partial or not alone in its read, the end of the stream. It returns those bytes, and the task takes them
as if it had read them itself: every call the session answers is answered on the event loop, never here.

Nobody else writes to the connection meanwhile: nothing is in flight on it and its task waits for the
thread. The refusals the thread answered go back to the task in order, at most
:data:`MAX_REFUSALS_PER_TRIP` at a time, and are recorded before anything read after them. Cancelled (the
run's end, an interrupt), the task shuts the socket down (:meth:`RefusalReader.stop`): the thread's wait
ends, it returns, and what it answered is recorded before the connection closes.
"""

from __future__ import annotations

import logging
import os
import select
import socket
from typing import Any

import attrs
import trio

from actors.sandbox.refusals import ToolRefusals, named_call
from messages.codec import Codec, MessageDecodeError
from messages.rpc import RpcMessage

__all__ = ["MAX_REFUSALS_PER_TRIP", "REFUSALS_BEFORE_THREAD", "RefusalReader", "RefusedCall"]

log = logging.getLogger(__name__)

#: Refused calls in a row, answered on the event loop, before a connection's reading moves to a thread: a
#: script that mixes refused calls with others keeps them on the loop, where no hand-off is paid.
REFUSALS_BEFORE_THREAD = 2
#: Refused calls a thread answers before it hands them back to be recorded (and is started again).
MAX_REFUSALS_PER_TRIP = 256
_READ_SIZE = 65536


@attrs.frozen
class RefusedCall:
    """A call the thread refused, for the server's record: the tool, its arguments and the answer's text."""

    tool: str
    args: Any
    error: str


class RefusalReader:
    """Reads one connection in a worker thread and answers the calls of tools the script may not call.

    Args:
        sock: The connection's socket (non-blocking, as Trio makes every socket; the thread waits in ``poll``).
        codec: The RPC codec (its frame limit and JSON reader).
        refusals: The run's answers to calls of tools a script may not call.
    """

    def __init__(self, sock: trio.socket.SocketType, codec: Codec[RpcMessage], refusals: ToolRefusals) -> None:
        self._socket = sock
        self._fd = sock.fileno()
        self._codec = codec
        self._refusals = refusals
        #: The calls refused so far, in order; read by the event loop only once :meth:`read` returned.
        self.answered: list[RefusedCall] = []
        # Set on the event loop once read() returned: a late stop() must not shut a connection still in use.
        self.returned = False

    def read(self) -> bytes | None:
        """Answer refused calls until a read holds anything else (run in a worker thread).

        Returns:
            The bytes read that are not a refused call, for the event loop to take (empty: the stream
            ended, was reset, or an answer could not be written); None after :data:`MAX_REFUSALS_PER_TRIP`
            refusals, with nothing read beyond them.
        """
        poller = select.poll()
        poller.register(self._fd, select.POLLIN)
        answered = self.answered
        while len(answered) < MAX_REFUSALS_PER_TRIP:
            poller.poll()
            try:
                data = os.read(self._fd, _READ_SIZE)
            except BlockingIOError:
                continue
            except OSError:
                return b""
            refusal = self._refusal(data)
            if refusal is None:
                return data
            frame, call = refusal
            answered.append(call)
            if not self._write(frame):
                log.info("sandbox RPC: the script hung up before a refusal's response")
                return b""
        return None

    def stop(self) -> None:
        """End a :meth:`read` still waiting (on the event loop, when the connection's task is cancelled): the
        socket is shut down both ways, so the thread's next read finds the end and its next write fails."""
        if self.returned:
            return
        try:
            self._socket.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # already disconnected: the thread's wait ends by itself

    def _refusal(self, data: bytes) -> tuple[bytes, RefusedCall] | None:
        """The answer and record of ``data`` when it is exactly one frame calling a tool the script may not
        call; else None (the event loop takes it, and explains what is wrong with it)."""
        end = data.find(b"\n")
        if end != len(data) - 1:
            return None
        try:
            payload = self._codec.parse(data[:end])
        except MessageDecodeError:
            return None
        named = named_call(payload)
        if named is None or self._refusals.allows(named[1]):
            return None
        frame, error = self._refusals.refuse(*named)
        return frame, RefusedCall(named[1], payload.get("args"), error)

    def _write(self, frame: bytes) -> bool:
        """Write ``frame`` whole, waiting for room; False when the peer is gone."""
        view = memoryview(frame)
        sent = 0
        while sent < len(frame):
            try:
                sent += os.write(self._fd, view[sent:])
            except BlockingIOError:
                waiting = select.poll()
                waiting.register(self._fd, select.POLLOUT)
                waiting.poll()
            except OSError:
                return False
        return True
