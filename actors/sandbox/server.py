"""The RPC server of one execute_code run: an actor serving the Unix socket the child's ``hermes_tools`` stub calls.

The server is ``…/tool:<id>/sandbox/rpc`` in the actor tree. A connection starts with the run's token and a
newline, nothing else: the server reads exactly that many bytes, within :data:`HANDSHAKE_SECONDS`, and
compares them in constant time before it decodes anything, so a peer without the token never reaches the
JSON decoder. Then every frame is a :class:`messages.rpc.RpcRequest`; the answer is an :class:`RpcResponse`
with the same id.

Everything is a Trio task of the actor: ``trio.serve_listeners`` accepts (and outlives running out of
descriptors), each connection is a task reading its :class:`trio.SocketStream`, and each admitted call is
an :class:`~actors.sandbox.jobs.RpcCallJob` (``…/rpc/call:<n>``) run in a task of its connection, under
the session's tool gate (the rules of a parallel batch), so a script's threads get real parallelism where
it is safe. Stopping the run is cancellation: the server's scope is the run's, so an interrupt reaches
every connection and every call. A refused call (a tool the script may not call, a malformed frame, the
call limit) is answered by the connection's task at once, between two reads (a run of calls of tools the
script may not call, by a thread of the connection's own: :mod:`actors.sandbox.readers`); so is an admitted call its
tool rejects before running (arguments that fail the tool's checks), through the session's path
(``answer_rejected``): it runs nothing, so it needs neither the gate nor a job, and it is counted and
recorded as any admitted call. Made again unchanged, it is answered by the connection's thread too, from the
session's answers (``repeat_rejected``), and counted and recorded on the loop after, in order.

Nothing a peer sends can stop the server or the run: a bad frame gets an error response; a wrong,
missing or late token, or anything that breaks a connection, gets an error response, a log line, and
that connection closed.
"""

from __future__ import annotations

import hmac
import json
import logging
import math
import os
import socket
import traceback
from collections.abc import Callable
from typing import Any

import attrs
import outcome
import trio

from actors import Actor, JobStopped
from actors.sandbox.errors import RpcAuthError, RpcCallStopped, RpcRefused, SandboxSetupError
from actors.sandbox.frames import plain_request, result_frame
from actors.sandbox.gate import SerialGate, ToolGate
from actors.sandbox.calls import AnswerRejected, CallTool, RepeatRejected, RpcCallJob
from actors.sandbox.readers import REFUSALS_BEFORE_THREAD, RefusalReader, RefusedCall, RepeatedCall, Repeating
from actors.sandbox.refusals import ToolRefusals, named_call
from actors.sandbox.result import SandboxToolCall
from actors.sandbox.stubs import SANDBOX_ALLOWED_TOOLS, SANDBOX_EXCLUDED_TOOLS, TERMINAL_STRIPPED_ARGS
from actors.sandbox.wire import Wire, WireClosed
from messages.codec import Codec, FrameBuffer, FrameTooLarge, MessageDecodeError
from messages.rpc import RpcMessage, RpcRequest, RpcResponse
from messages.sockets import SocketPathTooLong, listen_private, peer_uid, request_id_of
from tools.results import ToolReply

log = logging.getLogger(__name__)

#: Largest request frame the server reads (a write_file of a big file still fits).
MAX_REQUEST_BYTES = 8 * 1024 * 1024
#: Seconds a new connection has to present the token before it is closed.
HANDSHAKE_SECONDS = 5.0
#: Authenticated connections of one run served at once (a script's stub opens one per process).
MAX_CONNECTIONS = 32
#: Connections of one run open at once, authenticated or not. Past it the server accepts no more until
#: one closes (new ones wait in the listen backlog), so a script cannot spend the daemon's descriptors.
MAX_OPEN_CONNECTIONS = 2 * MAX_CONNECTIONS
#: Refused calls of one run kept for the transcript; later ones are only counted. A script can make
#: refused calls as fast as the socket turns them round for its whole timeout.
MAX_RECORDED_REFUSALS = 1000
#: Malformed requests and refused connections of one run logged one by one, each cut to
#: LOGGED_ERROR_CHARS (the text may echo what the script sent); the rest are counted in one line when
#: the server stops, so a script cannot flood the daemon's log.
MAX_LOGGED_REJECTIONS = 10
LOGGED_ERROR_CHARS = 300
#: Connections of one run whose refusals a thread of their own answers at once (:mod:`actors.sandbox.readers`);
#: the others answer theirs on the event loop.
MAX_REFUSAL_THREADS = 2
#: Calls a thread answered that are recorded before the connection's task lets other tasks run (their tool lines
#: reach the clients in between).
RECORDS_BETWEEN_CHECKPOINTS = 16
# Connections waiting to be accepted; more wait in the script's connect().
_BACKLOG = 16

# Built once: json.dumps with an option builds a new encoder at every call.
_encode_args = json.JSONEncoder(ensure_ascii=False).encode


@attrs.frozen
class RpcServerStatistics:
    """A snapshot of the server's counters.

    Attributes:
        tool_calls: Calls dispatched so far (refused ones not counted).
        in_flight: Calls running or waiting for the gate now.
        refused: Requests answered with an error before dispatch (bad tool, limit, token, frame).
        connections: Connections accepted so far.
        unrecorded: Refused calls beyond :data:`MAX_RECORDED_REFUSALS`, counted but not recorded.
    """

    tool_calls: int
    in_flight: int
    refused: int
    connections: int
    unrecorded: int = 0


def open_listener(path: str) -> socket.socket:
    """Listen on a new Unix socket at ``path`` with mode 0600 (blocking; its directory must already be private).

    Raises:
        SandboxSetupError: the path is too long or the socket cannot be bound.
    """
    try:
        return listen_private(path, _BACKLOG)
    except SocketPathTooLong as exc:
        raise SandboxSetupError(str(exc)) from exc
    except OSError as exc:
        raise SandboxSetupError(f"could not listen on {path}: {exc}") from exc


async def bind_listener(path: str) -> trio.socket.SocketType:
    """:func:`open_listener` in a worker thread, as a Trio socket.

    Raises:
        SandboxSetupError: the path is too long or the socket cannot be bound.
    """
    return trio.socket.from_stdlib_socket(await trio.to_thread.run_sync(open_listener, path))


def _request_id_of(frame: bytes) -> int:
    # A frame the codec refused may still name the request it belongs to; answer that id so the
    # calling thread in the script is not left waiting.
    request_id = request_id_of(frame, "id")
    return request_id if type(request_id) is int else 0


class _SlotListener(trio.abc.Listener[trio.SocketStream]):
    """A Unix-socket listener that accepts only while a slot is free; the connection's handler frees it.

    Past :data:`MAX_OPEN_CONNECTIONS` new connections wait in the kernel's backlog, holding none of the
    daemon's descriptors.
    """

    def __init__(self, listener: trio.socket.SocketType, slots: int) -> None:
        self._inner = trio.SocketListener(listener)
        self.slots = trio.Semaphore(slots)

    async def accept(self) -> trio.SocketStream:
        """The next connection, once a slot is free.

        Raises:
            OSError: accept failed (``serve_listeners`` waits and retries the errors of a shortage).
        """
        await self.slots.acquire()
        try:
            return await self._inner.accept()
        except BaseException:
            self.slots.release()
            raise

    async def aclose(self) -> None:
        """Close the listening socket."""
        await self._inner.aclose()


class _Connection:
    """One authenticated connection: its wire (refusals from the reading task and responses from call
    tasks share it) and the nursery of its calls."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.socket = stream.socket
        self.wire = Wire(stream)
        self.calls: trio.Nursery
        # Calls of tools the script may not call, answered one after the other since the last other frame.
        self.refused_in_a_row = 0
        # The last frame's call when it was answered at once: (tool, arguments as JSON text, arguments).
        self.answered_at_once: tuple[str, str, dict[str, Any]] | None = None
        # That call when the frame before it was the same call, answered at once too: a thread may answer it.
        self.repeated: tuple[str, str, dict[str, Any]] | None = None


class RpcServer(Actor[None]):
    """Serves the tool calls of one sandboxed script, as ``rpc`` under the run's job.

    It reads no messages: its work is its socket. Each admitted call runs as a ``call:<n>`` job under it.

    Args:
        listener: The bound listening socket (:func:`bind_listener`); the server closes it.
        call_tool: The session's tool-execution path (approvals, guardrails, caps, events).
        answer_rejected: The session's answer to a call its tool rejects before running (that path's, without
            a job); None: every admitted call runs as a job.
        repeat_rejected: The session's answers to such a call made again unchanged, for a thread of the
            connection to tell (:mod:`actors.sandbox.readers`); None: each is answered on the event loop.
        allowed_tools: What the script may call (allow-list ∩ the session's enabled tools).
        token: The per-execution secret each connection must present first (no newline in it).
        max_tool_calls: Calls dispatched before further ones are refused.
        per_call_timeout: Seconds one call may run once admitted by the gate.
        run_deadline: When the whole script is stopped (``trio.current_time()`` clock); a per-call
            timeout that would expire after it is not armed, as it could never fire.
        gate: Admission of concurrent calls; :class:`SerialGate` when None.
        cwd: Returns the session's working directory (the gate resolves relative paths with it).
        on_tool_call: Receives a record of every request answered, refused or not.
        known_tools: Tool names that exist but are kept out of scripts, for a more helpful refusal.
        redact: Applied to failure texts produced here.
        expected_uid: The uid a peer must have; the daemon's own by default.
        handshake_timeout: Seconds a connection has to present the token.

    Raises:
        ValueError: the token is empty or holds a newline.
    """

    kind = "rpc-server"

    def __init__(
        self,
        listener: trio.socket.SocketType,
        *,
        call_tool: CallTool,
        answer_rejected: AnswerRejected | None = None,
        repeat_rejected: RepeatRejected | None = None,
        allowed_tools: frozenset[str],
        token: str,
        max_tool_calls: int,
        per_call_timeout: float,
        run_deadline: float = math.inf,
        gate: ToolGate | None = None,
        cwd: Callable[[], str] = os.getcwd,
        on_tool_call: Callable[[SandboxToolCall], None] = lambda call: None,
        known_tools: frozenset[str] = SANDBOX_ALLOWED_TOOLS | SANDBOX_EXCLUDED_TOOLS,
        redact: Callable[[str], str] = lambda text: text,
        expected_uid: int | None = None,
        handshake_timeout: float = HANDSHAKE_SECONDS,
    ) -> None:
        if not token or "\n" in token:
            raise ValueError("the RPC token must be a non-empty line")
        super().__init__()
        self._listener = _SlotListener(listener, MAX_OPEN_CONNECTIONS)
        self._call_tool = call_tool
        self._answer_rejected = answer_rejected
        self._repeat_rejected = repeat_rejected
        # The thread answering a repeated call for the session, and set once its calls are recorded.
        self._repeating: tuple[RefusalReader, trio.Event] | None = None
        # Of its calls, those counted in _tool_calls already.
        self._repeats_recorded = 0
        # Allowed calls being taken by a connection's task now (none may start while one is).
        self._taking = 0
        self._preamble = token.encode() + b"\n"
        self._handshake_timeout = handshake_timeout
        self._max_tool_calls = max_tool_calls
        self._per_call_timeout = per_call_timeout
        self._run_deadline = run_deadline
        self._gate: ToolGate = gate if gate is not None else SerialGate()
        self._cwd = cwd
        self._on_tool_call = on_tool_call
        self._redact = redact
        self._expected_uid = os.getuid() if expected_uid is None else expected_uid
        self._codec: Codec[RpcMessage] = Codec(RpcMessage, max_frame_bytes=MAX_REQUEST_BYTES)
        self._refusals = ToolRefusals(self._codec, allowed_tools, known_tools)
        self._refusal_threads = trio.CapacityLimiter(MAX_REFUSAL_THREADS)
        self._tool_calls = 0
        self._in_flight = 0
        self._refused = 0
        self._rejections = 0
        self._recorded_refusals = 0
        self._unrecorded = 0
        self._connections = 0
        self._authenticated = 0

    @property
    def tool_calls(self) -> int:
        """Calls dispatched so far, those a thread answered for the session and not yet recorded too."""
        repeating = self._repeating
        return self._tool_calls + (repeating[0].repeats - self._repeats_recorded if repeating is not None else 0)

    def counters(self) -> RpcServerStatistics:
        """A snapshot of the server's counters."""
        return RpcServerStatistics(
            self.tool_calls, self._in_flight, self._refused, self._connections, self._unrecorded
        )

    def snapshot_details(self) -> dict[str, Any]:
        """The counters, for ``tree`` and ``inspect``."""
        return {
            "tool_calls": self.tool_calls,
            "in_flight": self._in_flight,
            "refused": self._refused,
            "connections": self._connections,
            "open_connections": self._authenticated,
        }

    async def main(self) -> None:
        """Serve connections until the run stops the server; then log how many rejections went unlogged."""
        self.activity = "serving"
        try:
            # trio's accept loop: out of descriptors (EMFILE, ENFILE), it logs, waits a moment and retries.
            await trio.serve_listeners(self._serve_connection, [self._listener])
        finally:
            if self._rejections > MAX_LOGGED_REJECTIONS:
                unlogged = self._rejections - MAX_LOGGED_REJECTIONS
                log.warning("sandbox RPC: %d more malformed requests and refused connections, not logged", unlogged)

    async def _serve_connection(self, stream: trio.SocketStream) -> None:
        """One connection, from its token to its end (``serve_listeners`` closes the stream after)."""
        self._connections += 1
        try:
            try:
                self._check_peer(stream.socket)
                await self._authenticate(stream)
                if self._authenticated >= MAX_CONNECTIONS:
                    raise RpcAuthError(f"too many connections to the RPC server (at most {MAX_CONNECTIONS})")
            except RpcAuthError as exc:
                await self._refuse_connection(stream, exc)
                return
            self._authenticated += 1
            try:
                await self._serve_authenticated(_Connection(stream))
            finally:
                self._authenticated -= 1
        finally:
            self._listener.slots.release()

    async def _refuse_connection(self, stream: trio.SocketStream, exc: RpcAuthError) -> None:
        self._refused += 1
        self._warn("refusing connection", str(exc))
        with trio.move_on_after(self._handshake_timeout):
            try:
                await stream.send_all(self._codec.encode(RpcResponse(id=0, error=str(exc))))
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                pass  # the peer is gone: nobody to tell

    async def _serve_authenticated(self, conn: _Connection) -> None:
        """Read requests until the peer closes; calls still running are answered before the connection ends."""
        try:
            async with trio.open_nursery() as conn.calls:
                await self._read(conn)
        except* Exception as group:
            # A bug or a frame nothing foresaw: it ends this connection, never the run.
            log.error("sandbox RPC: connection failed; closing it", exc_info=group)
            self._refused += 1
            await self._send(conn, RpcResponse(id=0, error="Internal error in the RPC server; connection closed"))

    async def _authenticate(self, stream: trio.SocketStream) -> None:
        """Read exactly the token line (no byte more) within the deadline and check it in constant time.

        Raises:
            RpcAuthError: wrong, missing, incomplete or late.
        """
        expected = self._preamble
        received = bytearray()
        with trio.move_on_after(self._handshake_timeout):
            while len(received) < len(expected):
                try:
                    data = await stream.receive_some(len(expected) - len(received))
                except trio.BrokenResourceError:
                    data = b""
                if not data:
                    raise RpcAuthError("the peer hung up before presenting the RPC token")
                received += data
            if hmac.compare_digest(bytes(received), expected):
                return
            raise RpcAuthError("Invalid RPC token")
        raise RpcAuthError(f"no RPC token within {self._handshake_timeout:g} s")

    def _check_peer(self, sock: trio.socket.SocketType) -> None:
        uid = peer_uid(sock)
        if uid is not None and uid != self._expected_uid:
            raise RpcAuthError(f"peer uid {uid} is not the daemon's uid {self._expected_uid}")

    async def _read(self, conn: _Connection) -> None:
        """Take each frame the peer sends until it closes its side (or resets); a run of refused calls is
        read and answered by a thread meanwhile (:meth:`_refusals_in_thread`)."""
        buffer = FrameBuffer(MAX_REQUEST_BYTES)
        receive = conn.wire.receive
        while True:
            hand_over, repeating = self._hand_over(conn, buffer)
            if hand_over:
                handed = await self._refusals_in_thread(conn, repeating)
                if handed is None:
                    continue
                data = handed
            else:
                data = await receive()
            if not data:
                return
            frame = buffer.sole_frame(data)
            if frame is not None:
                await self._take(conn, frame)
                continue
            conn.refused_in_a_row = 0
            buffer.feed(data)
            while True:
                try:
                    for frame in buffer.frames():
                        await self._take(conn, frame)
                except FrameTooLarge as exc:
                    await self._refuse_frame(conn, 0, exc)
                    continue
                break

    def _hand_over(self, conn: _Connection, buffer: FrameBuffer) -> tuple[bool, Repeating | None]:
        """Whether a thread reads ``conn`` next (after a run of refusals, or a call answered at once made again),
        and the call it answers for the session."""
        refusals = conn.refused_in_a_row >= REFUSALS_BEFORE_THREAD
        if not (refusals or conn.repeated is not None) or not self._may_hand_over(conn, buffer):
            return False, None
        repeating = self._repeating_on(conn) if conn.repeated is not None else None
        return refusals or repeating is not None, repeating

    def _may_hand_over(self, conn: _Connection, buffer: FrameBuffer) -> bool:
        """Whether a thread may read ``conn`` now: its next bytes start a frame, nothing in flight on it can
        write to it, and the run has a thread to spare."""
        return buffer.empty and not conn.calls.child_tasks and self._refusal_threads.available_tokens > 0

    def _repeating_on(self, conn: _Connection) -> Repeating | None:
        """The session's answers to ``conn``'s repeated call, when a thread may give them now: nothing else in
        flight in the run or being taken, no other such thread, and the session answers it so."""
        if self._repeating is not None or self._in_flight or self._taking or self._repeat_rejected is None:
            return None
        assert conn.repeated is not None
        tool, args_text, args = conn.repeated
        answers = self._repeat_rejected(tool, args)
        if answers is None:
            conn.repeated = None
            return None
        return Repeating(tool, args_text, answers, self._max_tool_calls - self._tool_calls)

    async def _refusals_in_thread(self, conn: _Connection, repeating: Repeating | None) -> bytes | None:
        """Let a thread answer refused calls on ``conn`` (and ``repeating``'s call made again) and record them;
        what it read and did not answer (:meth:`RefusalReader.read`)."""
        reader = RefusalReader(conn.socket, self._codec, self._refusals, repeating)
        recorded = trio.Event()
        if repeating is not None:
            self._repeating = (reader, recorded)
            self._repeats_recorded = 0
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_stop_when_cancelled, reader)
                handed = await trio.to_thread.run_sync(reader.read, limiter=self._refusal_threads)
                reader.returned = True
                nursery.cancel_scope.cancel()
        finally:
            # The thread has returned (it is waited for, never abandoned): what it answered is recorded,
            # in order, before anything read after it, and also when the run is cancelled.
            reader.close()
            with trio.CancelScope(shield=True):
                try:
                    await self._record_answered(reader.answered, repeating)
                finally:
                    if repeating is not None:
                        self._repeating = None
                    recorded.set()
        if handed:
            conn.refused_in_a_row = 0
            conn.repeated = conn.answered_at_once = None
        return handed

    async def _record_answered(self, answered: list[RefusedCall | RepeatedCall], repeating: Repeating | None) -> None:
        """Record what a thread answered, in order; other tasks run every :data:`RECORDS_BETWEEN_CHECKPOINTS` calls
        (each call's tool lines are two events for every client: a whole trip's at once would flood them)."""
        for number, call in enumerate(answered, start=1):
            if isinstance(call, RepeatedCall):
                assert repeating is not None
                self._record_repeated(repeating, call)
            else:
                self._record_refusal(call.tool, call.args, call.error)
            if number % RECORDS_BETWEEN_CHECKPOINTS == 0:
                await trio.lowlevel.checkpoint()

    def _record_repeated(self, repeating: Repeating, call: RepeatedCall) -> None:
        """Count and record a call the thread answered for the session, as :meth:`_take` and :meth:`_respond` do."""
        self._tool_calls += 1
        self._repeats_recorded += 1
        answers = repeating.answers
        answers.record(call.text, call.duration)
        error = answers.error
        self._on_tool_call(
            SandboxToolCall(repeating.tool, len(repeating.args_text), call.duration, ok=error is None, error=error)
        )

    async def _claim_session(self) -> None:
        """Wait until no thread answers for the session (waking the one that does): a call is about to reach it."""
        while self._repeating is not None:
            reader, recorded = self._repeating
            reader.wake()
            await recorded.wait()

    async def _take(self, conn: _Connection, frame: bytes) -> None:
        """Answer a frame that must be refused now; start an admitted call in a task of its connection."""
        refused_before, conn.refused_in_a_row = conn.refused_in_a_row, 0
        at_once_before, conn.answered_at_once, conn.repeated = conn.answered_at_once, None, None
        try:
            payload = self._codec.parse(frame)
            named = named_call(payload)
            request: RpcMessage | None = None
            if named is not None:
                if not self._refusals.allows(named[1]):
                    conn.refused_in_a_row = refused_before + 1
                    await self._refuse_tool(conn, *named, payload.get("args"))
                    return
                request = plain_request(payload, *named)
            if request is None:
                request = self._codec.from_dict(payload)
        except MessageDecodeError as exc:
            # The codec bounds nesting and integer digits itself (messages.untrusted): nothing else escapes.
            await self._refuse_frame(conn, _request_id_of(frame), exc)
            return
        if not isinstance(request, RpcRequest):
            wrong = MessageDecodeError(f"expected an RpcRequest, got {type(request).__name__}")
            await self._refuse_frame(conn, request.id, wrong)
            return
        self._taking += 1
        try:
            await self._claim_session()
            await self._take_call(conn, request, at_once_before)
        finally:
            self._taking -= 1

    async def _take_call(
        self, conn: _Connection, request: RpcRequest, at_once_before: tuple[str, str, dict[str, Any]] | None
    ) -> None:
        """Answer an allowed call at once, or start it in a task of its connection; ``at_once_before``: the
        connection's call before it, when that was answered at once."""
        try:
            args = self._admit(request)
        except RpcRefused as exc:
            await self._send(conn, RpcResponse(id=request.id, error=str(exc)))
            self._record_refusal(request.tool, request.args, str(exc))
            return
        answer_rejected = self._answer_rejected
        if answer_rejected is not None and await self._answered_at_once(answer_rejected, conn, request, args):
            if self._repeat_rejected is not None:
                call = (request.tool, _encode_args(request.args), args)
                conn.answered_at_once = call
                if at_once_before is not None and at_once_before[:2] == call[:2]:
                    conn.repeated = call
            return
        self._in_flight += 1  # from now: no thread may answer for the session until the call has ended
        conn.calls.start_soon(self._answer, conn, request, args, self._tool_calls)

    async def _refuse_tool(self, conn: _Connection, request_id: int, tool: str, args: object) -> None:
        """Answer a call to a tool the script may not call, then count and record it."""
        frame, error = self._refusals.refuse(request_id, tool)
        await self._send_frame(conn, frame, request_id)
        self._record_refusal(tool, args, error)

    def _record_refusal(self, tool: str, args: object, error: str) -> None:
        """Count a refused call and record it, within :data:`MAX_RECORDED_REFUSALS`."""
        self._refused += 1
        if self._recorded_refusals >= MAX_RECORDED_REFUSALS:
            self._unrecorded += 1
            return
        self._recorded_refusals += 1
        size = len(_encode_args(args))
        self._on_tool_call(SandboxToolCall(tool=tool, args_bytes=size, duration_seconds=0.0, ok=False, error=error))

    async def _refuse_frame(self, conn: _Connection, request_id: int, exc: Exception) -> None:
        error = str(exc)
        self._refused += 1
        self._warn("malformed request", error)
        await self._send(conn, RpcResponse(id=request_id, error=f"Malformed request: {error}"))

    def _warn(self, what: str, error: str) -> None:
        """Log a rejection, within :data:`MAX_LOGGED_REJECTIONS` per run, cut to :data:`LOGGED_ERROR_CHARS`."""
        self._rejections += 1
        if self._rejections <= MAX_LOGGED_REJECTIONS:
            cut = error if len(error) <= LOGGED_ERROR_CHARS else error[:LOGGED_ERROR_CHARS] + "…"
            log.warning("sandbox RPC: %s: %s", what, cut)

    async def _send(self, conn: _Connection, response: RpcResponse) -> None:
        await self._send_frame(conn, self._codec.encode(response), response.id)

    async def _send_frame(self, conn: _Connection, frame: bytes, request_id: int) -> None:
        """Write one whole frame; waits while the script does not read (so its requests are not read either)."""
        try:
            await conn.wire.send(frame)
        except WireClosed:
            log.info("sandbox RPC: the script hung up before response %d", request_id)

    def _admit(self, request: RpcRequest) -> dict[str, Any]:
        """Check a request of an allowed tool against the call limit; count it when admitted."""
        if self._tool_calls >= self._max_tool_calls:
            raise RpcRefused(
                f"Tool call limit reached ({self._max_tool_calls}). No more tool calls allowed in this execution."
            )
        self._tool_calls += 1
        if request.tool == "terminal":
            return {k: v for k, v in request.args.items() if k not in TERMINAL_STRIPPED_ARGS}
        return dict(request.args)

    async def _answered_at_once(
        self, answer_rejected: AnswerRejected, conn: _Connection, request: RpcRequest, args: dict[str, Any]
    ) -> bool:
        """Answer an admitted call its tool rejects before running, in the connection's task, and record it;
        False when the call must run as a job."""
        started = trio.current_time()
        response: RpcResponse
        error: str | None
        try:
            reply = await answer_rejected(request.tool, args)
        except Exception as exc:
            response, error = self._crashed(request, exc)
        else:
            if reply is None:
                return False
            response, error = _replied(request, reply)
        await self._respond(conn, request, trio.current_time() - started, response, error)
        return True

    async def _answer(self, conn: _Connection, request: RpcRequest, args: dict[str, Any], number: int) -> None:
        """Run an admitted call, record it for the transcript, then send its response."""
        try:
            started = trio.current_time()
            response, error = await self._run(request, args, number)
        finally:
            self._in_flight -= 1
        await self._respond(conn, request, trio.current_time() - started, response, error)

    async def _respond(
        self, conn: _Connection, request: RpcRequest, duration: float, response: RpcResponse, error: str | None
    ) -> None:
        """Record an admitted call for the transcript, then send its response.

        Recorded first: answered first, the daemon would still be making the record (and the tool lines and
        progress it brings) when the script's next request comes, and on a busy machine would then wait for a
        core as a runnable task instead of being woken; measured alternately, that cost more CPU and wall
        per call than it saved.
        """
        self._on_tool_call(self._call_record(request, duration, error))
        if response.error is None and response.result is not None:
            await self._send_frame(conn, result_frame(response.id, response.result), response.id)
        else:
            await self._send(conn, response)

    @staticmethod
    def _call_record(request: RpcRequest, duration: float, error: str | None) -> SandboxToolCall:
        return SandboxToolCall(
            tool=request.tool,
            args_bytes=len(_encode_args(request.args)),
            duration_seconds=duration,
            ok=error is None,
            error=error,
        )

    async def _run(self, request: RpcRequest, args: dict[str, Any], number: int) -> tuple[RpcResponse, str | None]:
        """The response to an admitted ``request`` and, when the call failed, why (for the transcript record)."""
        async with self._gate.slot(request.tool, args, self._cwd()):
            deadline = trio.current_time() + self._per_call_timeout
            if deadline >= self._run_deadline:
                return await self._call(request, args, number)
            with trio.move_on_at(deadline):
                return await self._call(request, args, number)
        return _failed(request, f"Tool call timed out after {self._per_call_timeout:g}s")

    async def _call(self, request: RpcRequest, args: dict[str, Any], number: int) -> tuple[RpcResponse, str | None]:
        """Run the call as ``call:<number>``; whatever the tool raised is the script's answer, not the server's end."""
        try:
            answer = await self.run_job(RpcCallJob(request.tool, args, self._call_tool), f"call:{number}")
        except JobStopped as stopped:
            answer = outcome.Error(RpcCallStopped(f"tool call {request.tool} was stopped: {stopped}"))
        if isinstance(answer, outcome.Error):
            return self._crashed(request, answer.error)
        return _replied(request, answer.unwrap())

    def _crashed(self, request: RpcRequest, failure: BaseException) -> tuple[RpcResponse, str]:
        """The error response to a call whose tool path raised ``failure`` (logged, redacted)."""
        trace = "".join(traceback.format_exception(failure))
        log.error("sandbox RPC: tool %s raised\n%s", request.tool, self._redact(trace))
        return _failed(request, self._redact(f"Tool '{request.tool}' failed: {type(failure).__name__}: {failure}"))


async def _stop_when_cancelled(reader: RefusalReader) -> None:
    """Wait for the reading thread's connection to be cancelled, then end the thread's wait."""
    try:
        await trio.sleep_forever()
    finally:
        reader.stop()


def _replied(request: RpcRequest, reply: ToolReply) -> tuple[RpcResponse, str | None]:
    """The response carrying the session's reply to ``request``, and why the call failed, if it did."""
    # The tool's own failure is a result the script reads; the reply says it failed, so the
    # transcript records it without the text being parsed.
    return RpcResponse(id=request.id, result=reply.text), reply.error


def _failed(request: RpcRequest, error: str) -> tuple[RpcResponse, str]:
    """An error response the server makes itself (refusal, timeout, crash), with its reason."""
    return RpcResponse(id=request.id, error=error), error
