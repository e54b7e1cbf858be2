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

The same thread answers a call the session answered at once (its tool rejected its arguments) when the script
makes it again unchanged (:class:`Repeating`): its answer is the session's (:class:`~actors.sandbox.calls.
AnsweredAgain`, whose guardrail counts and texts are those the event loop would reach, call after call), and the
calls are counted and recorded on the loop when the thread returns, in order with its refusals. That holds only
while nothing else reaches the session: the server starts such a thread only with nothing in flight in the run,
and a call read on another connection first wakes it (:meth:`RefusalReader.wake`) and waits until it returned
and its calls were recorded.
"""

from __future__ import annotations

import json
import logging
import os
import select
import socket
import time
from typing import Any

import attrs
import trio

from actors.sandbox.calls import AnsweredAgain
from actors.sandbox.frames import result_frame
from actors.sandbox.refusals import ToolRefusals, named_call
from messages.codec import Codec, MessageDecodeError
from messages.rpc import RpcMessage

__all__ = [
    "MAX_REFUSALS_PER_TRIP", "REFUSALS_BEFORE_THREAD", "RefusalReader", "RefusedCall", "RepeatedCall", "Repeating",
]

log = logging.getLogger(__name__)

#: Refused calls in a row, answered on the event loop, before a connection's reading moves to a thread: a
#: script that mixes refused calls with others keeps them on the loop, where no hand-off is paid.
REFUSALS_BEFORE_THREAD = 2
#: Refused calls a thread answers before it hands them back to be recorded (and is started again).
MAX_REFUSALS_PER_TRIP = 256
_READ_SIZE = 65536
# Built once: what the session compares to tell a call made again unchanged (tools.dispatch's key).
_encode_args = json.JSONEncoder(ensure_ascii=False).encode


@attrs.frozen
class RefusedCall:
    """A call the thread refused, for the server's record: the tool, its arguments and the answer's text."""

    tool: str
    args: Any
    error: str


@attrs.frozen
class RepeatedCall:
    """A call made again that the thread answered: its answer's text and the seconds it took."""

    text: str
    duration: float


@attrs.frozen(eq=False)
class Repeating:
    """The call a thread answers for the session when the script makes it again unchanged.

    Attributes:
        tool: Its tool.
        args_text: Its arguments as JSON text (as ``tools.dispatch`` compares them).
        answers: The session's answers (:class:`~actors.sandbox.calls.AnsweredAgain`).
        quota: How many the thread may answer (the run's call limit left).
    """

    tool: str
    args_text: str
    answers: AnsweredAgain
    quota: int


class RefusalReader:
    """Reads one connection in a worker thread and answers the calls of tools the script may not call.

    Args:
        sock: The connection's socket (non-blocking, as Trio makes every socket; the thread waits in ``poll``).
        codec: The RPC codec (its frame limit and JSON reader).
        refusals: The run's answers to calls of tools a script may not call.
        repeating: A call it also answers when made again unchanged; then :meth:`wake` ends its wait and
            :meth:`close` must be called once :meth:`read` returned.
    """

    def __init__(
        self, sock: trio.socket.SocketType, codec: Codec[RpcMessage], refusals: ToolRefusals,
        repeating: Repeating | None = None,
    ) -> None:
        self._socket = sock
        self._fd = sock.fileno()
        self._codec = codec
        self._refusals = refusals
        self._repeating = repeating
        #: Calls made again it answered (or is answering) so far; the event loop may read it at any time.
        self.repeats = 0
        # A pipe whose read end the thread also waits for: written by wake().
        self._waker: tuple[int, int] | None = os.pipe() if repeating is not None else None
        #: The calls answered so far, in order; read by the event loop only once :meth:`read` returned.
        self.answered: list[RefusedCall | RepeatedCall] = []
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
        if self._waker is not None:
            poller.register(self._waker[0], select.POLLIN)
        answered = self.answered
        while len(answered) < MAX_REFUSALS_PER_TRIP:
            ready = poller.poll()
            if len(ready) > 1 or ready[0][0] != self._fd:
                return None  # woken: the loop has another call for the session
            try:
                data = os.read(self._fd, _READ_SIZE)
            except BlockingIOError:
                continue
            except OSError:
                return b""
            started = time.perf_counter()
            answer = self._answer(data)
            if answer is None:
                return data
            frame, call = answer
            if type(call) is RepeatedCall:
                call = RepeatedCall(call.text, time.perf_counter() - started)
            answered.append(call)
            if not self._write(frame):
                log.info("sandbox RPC: the script hung up before an answer made off the event loop")
                return b""
        return None

    def wake(self) -> None:
        """End a :meth:`read` of a reader with a repeated call (on the event loop, before another call reaches
        the session): it returns None before it answers anything more."""
        if self._waker is not None and not self.returned:
            os.write(self._waker[1], b"w")

    def close(self) -> None:
        """Close the wake-up pipe (on the event loop, once :meth:`read` returned)."""
        if self._waker is not None:
            for fd in self._waker:
                os.close(fd)
            self._waker = None

    def stop(self) -> None:
        """End a :meth:`read` still waiting (on the event loop, when the connection's task is cancelled): the
        socket is shut down both ways, so the thread's next read finds the end and its next write fails."""
        if self.returned:
            return
        try:
            self._socket.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # already disconnected: the thread's wait ends by itself

    def _answer(self, data: bytes) -> tuple[bytes, RefusedCall | RepeatedCall] | None:
        """The answer and record of ``data`` when it is exactly one frame calling a tool the script may not
        call, or making the repeated call again while the session answers it so; else None (the event loop
        takes it, and explains what is wrong with it)."""
        end = data.find(b"\n")
        if end != len(data) - 1:
            return None
        try:
            payload = self._codec.parse(data[:end])
        except MessageDecodeError:
            return None
        named = named_call(payload)
        if named is None:
            return None
        if self._refusals.allows(named[1]):
            return self._repeated(payload, *named)
        frame, error = self._refusals.refuse(*named)
        return frame, RefusedCall(named[1], payload.get("args"), error)

    def _repeated(self, payload: dict[str, Any], request_id: int, tool: str) -> tuple[bytes, RepeatedCall] | None:
        """The answer to the repeated call made again, when ``payload`` is that call and the session answers it
        so; else None."""
        repeating = self._repeating
        if repeating is None or tool != repeating.tool or self.repeats >= repeating.quota:
            return None
        args = payload.get("args")
        if len(payload) != 4 or type(args) is not dict or _encode_args(args) != repeating.args_text:
            return None
        text = repeating.answers.text(self.repeats + 1)
        if text is None:
            return None
        self.repeats += 1
        return result_frame(request_id, text), RepeatedCall(text, 0.0)

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
