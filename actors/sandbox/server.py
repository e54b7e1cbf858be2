"""The RPC server of one execute_code run: a Unix socket the child's ``hermes_tools`` stub calls.

A connection starts with the run's token and a newline, nothing else: the server reads exactly that
many bytes, within :data:`HANDSHAKE_SECONDS`, and compares them in constant time before it decodes
anything, so a peer without the token never reaches the JSON decoder. Then every frame is a
:class:`messages.rpc.RpcRequest`; the answer is an :class:`RpcResponse` with the same id. A worker thread
reads the connection (:mod:`actors.sandbox.connection`) and answers refusals itself; the requests it
admits run as tasks of the connection, concurrently, each admitted by the session's tool gate (the rules of a parallel
batch), so a script's threads get real parallelism where it is safe. Nothing a peer sends can stop
the server or the run: a bad frame gets an error response; a wrong, missing or late token, or
anything that breaks a connection, gets an error response, a log line, and that connection closed.
"""

from __future__ import annotations

import collections
import contextlib
import errno
import hmac
import json
import logging
import math
import os
import socket
import threading
import traceback
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import trio

from actors.sandbox.errors import RpcAuthError, RpcRefused, SandboxSetupError
from actors.sandbox.gate import SerialGate, ToolGate
from actors.sandbox.result import SandboxToolCall
from actors.sandbox.refusals import ToolRefusals, named_call
from actors.sandbox.stubs import SANDBOX_ALLOWED_TOOLS, SANDBOX_EXCLUDED_TOOLS, TERMINAL_STRIPPED_ARGS
from tools.results import ToolReply
from actors.sandbox.connection import Outbox, blocking_frames, wake_reader
from messages.codec import Codec, FrameTooLarge, MessageDecodeError
from messages.rpc import RpcMessage, RpcRequest, RpcResponse
from messages.sockets import SocketPathTooLong, bind_private_listener, peer_uid, request_id_of

log = logging.getLogger(__name__)

#: Largest request frame the server reads (a write_file of a big file still fits).
MAX_REQUEST_BYTES = 8 * 1024 * 1024
#: Seconds a new connection has to present the token before it is closed.
HANDSHAKE_SECONDS = 5.0
#: Connections of one run served at once (a script's stub opens one per process; each has a reader thread).
MAX_CONNECTIONS = 32
#: Connections of one run open at once, authenticated or not. Past it the server accepts no more until
#: one closes (new ones wait in the listen backlog), so a script cannot spend the daemon's descriptors.
MAX_OPEN_CONNECTIONS = 2 * MAX_CONNECTIONS
#: Refused calls of one run kept for the transcript; later ones are only counted. A script can make
#: refused calls as fast as the socket turns them round for its whole timeout, and each record is
#: held until the event loop takes it.
MAX_RECORDED_REFUSALS = 1000
#: Bytes of answers the reader thread leaves queued for a script that does not read them before it
#: stops reading that script's requests: the daemon holds no more than this for it.
MAX_QUEUED_ANSWER_BYTES = 256 * 1024
#: Malformed requests and refused connections of one run logged one by one, each cut to
#: LOGGED_ERROR_CHARS (the text may echo what the script sent); the rest are counted in one line when
#: the server stops, so a script cannot flood the daemon's log.
MAX_LOGGED_REJECTIONS = 10
LOGGED_ERROR_CHARS = 300
#: How long the server waits after running out of descriptors before accepting again (trio's own pause).
ACCEPT_RETRY_SECONDS = 0.1
# What accept raises when the process or the system is out of a resource: waiting may cure it.
_ACCEPT_CAPACITY_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS})

# Built once: json.dumps with an option builds a new encoder at every call.
_encode_args = json.JSONEncoder(ensure_ascii=False).encode

CallTool = Callable[[str, dict[str, Any]], Awaitable[ToolReply]]
"""The session's tool-execution path: a tool name and its arguments to the call's reply."""


@attrs.frozen
class RpcServerStatistics:
    """A snapshot of the server for the actor tree.

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


async def bind_listener(path: str) -> trio.socket.SocketType:
    """Listen on a new Unix socket at ``path`` with mode 0600 (its directory must already be private).

    Raises:
        SandboxSetupError: the path is too long or the socket cannot be bound.
    """
    try:
        return await bind_private_listener(path, 16)
    except SocketPathTooLong as exc:
        raise SandboxSetupError(str(exc)) from exc
    except OSError as exc:
        raise SandboxSetupError(f"could not listen on {path}: {exc}") from exc


def _request_id_of(frame: bytes) -> int:
    # A frame the codec refused may still name the request it belongs to; answer that id so the
    # calling thread in the script is not left waiting.
    request_id = request_id_of(frame, "id")
    return request_id if type(request_id) is int else 0


class _Connection:
    """One authenticated connection: its blocking socket, its outbox and the nursery of its calls."""

    def __init__(self, sock: socket.socket, trio_token: trio.lowlevel.TrioToken) -> None:
        self.sock = sock
        self.outbox = Outbox(sock)
        # The reader thread reaches the event loop through this.
        self.trio_token = trio_token
        self.calls: trio.Nursery
        # Records of calls the reader thread refused, passed on by the event loop at its next chance:
        # waking the loop for each would double the cost of a refused call. Records, not requests:
        # a refused request's arguments (up to MAX_REQUEST_BYTES) are not kept.
        self.refusals: collections.deque[SandboxToolCall] = collections.deque()


class RpcServer:
    """Serves the tool calls of one sandboxed script.

    Args:
        call_tool: The session's tool-execution path (approvals, guardrails, caps, events).
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

    def __init__(
        self,
        *,
        call_tool: CallTool,
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
        self._call_tool = call_tool
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
        self._tool_calls = 0
        self._in_flight = 0
        self._refused = 0
        self._rejections = 0
        self._recorded_refusals = 0
        self._unrecorded = 0
        self._connections = 0
        # Guards the counters and the call limit, which reader threads change.
        self._counters = threading.Lock()
        self._readers = trio.CapacityLimiter(MAX_CONNECTIONS)

    @property
    def tool_calls(self) -> int:
        """Calls dispatched so far."""
        return self._tool_calls

    def statistics(self) -> RpcServerStatistics:
        """A snapshot of the server's counters."""
        return RpcServerStatistics(
            self._tool_calls, self._in_flight, self._refused, self._connections, self._unrecorded
        )

    async def serve(
        self, listener: trio.socket.SocketType, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Accept connections on ``listener`` and serve them until cancelled; closes the listener."""
        open_slots = trio.Semaphore(MAX_OPEN_CONNECTIONS)
        # Not trio.serve_listeners: a connection is accepted only once it has a slot. The listener's
        # accept already retries the errors a client causes (ECONNABORTED and the like).
        accepting = trio.SocketListener(listener)
        try:
            with listener:
                async with trio.open_nursery() as nursery:
                    task_status.started()
                    while True:
                        await open_slots.acquire()
                        try:
                            stream = await accepting.accept()
                        except OSError as exc:
                            open_slots.release()
                            if exc.errno not in _ACCEPT_CAPACITY_ERRNOS:
                                raise
                            # Out of descriptors (the script's own, or the daemon's): the run goes on and
                            # the connection waits in the backlog, as trio.serve_listeners does it.
                            log.warning("sandbox RPC: accept failed (%s); retrying in %gs", exc, ACCEPT_RETRY_SECONDS)
                            await trio.sleep(ACCEPT_RETRY_SECONDS)
                            continue
                        self._connections += 1
                        nursery.start_soon(self._serve_in_slot, stream.socket, open_slots)
        finally:
            if self._rejections > MAX_LOGGED_REJECTIONS:
                unlogged = self._rejections - MAX_LOGGED_REJECTIONS
                log.warning("sandbox RPC: %d more malformed requests and refused connections, not logged", unlogged)

    async def _serve_in_slot(self, trio_sock: trio.socket.SocketType, open_slots: trio.Semaphore) -> None:
        try:
            await self._serve_connection(trio_sock)
        finally:
            open_slots.release()

    async def _serve_connection(self, trio_sock: trio.socket.SocketType) -> None:
        stream = trio.SocketStream(trio_sock)
        try:
            self._check_peer(trio_sock)
            await self._authenticate(stream)
            if self._readers.available_tokens < 1:
                raise RpcAuthError(f"too many connections to the RPC server (at most {MAX_CONNECTIONS})")
        except RpcAuthError as exc:
            self._count_refused()
            self._warn("refusing connection", str(exc))
            with trio.move_on_after(self._handshake_timeout):
                async with stream:
                    with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                        await stream.send_all(self._codec.encode(RpcResponse(id=0, error=str(exc))))
            return
        sock = socket.socket(fileno=trio_sock.detach())
        sock.setblocking(True)
        conn = _Connection(sock, trio.lowlevel.current_trio_token())
        try:
            async with trio.open_nursery() as conn.calls:
                await self._read_in_thread(conn)
        except* Exception as group:
            # A bug or a frame nothing foresaw: it ends this connection, never the run.
            log.error("sandbox RPC: connection failed; closing it", exc_info=group)
            self._count_refused()
            await self._send(conn, RpcResponse(id=0, error="Internal error in the RPC server; connection closed"))
        finally:
            trio.lowlevel.notify_closing(sock)
            sock.close()

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

    async def _read_in_thread(self, conn: _Connection) -> None:
        """Read the connection in a worker thread until the peer closes it or this task is cancelled."""
        try:
            async with trio.open_nursery() as watch:
                watch.start_soon(_wake_reader_when_cancelled, conn)
                await trio.to_thread.run_sync(self._read_frames, conn, limiter=self._readers)
                watch.cancel_scope.cancel()
        finally:
            # The thread has returned (its wait cannot be abandoned), so nothing is added after this.
            self._pass_on_refusals(conn)

    def _read_frames(self, conn: _Connection) -> None:
        """The reader thread: answer malformed and refused requests here, hand admitted ones to Trio."""
        for frame in blocking_frames(conn.sock, MAX_REQUEST_BYTES):
            if isinstance(frame, FrameTooLarge):
                self._refuse_frame(conn, 0, frame)
                continue
            try:
                payload = self._codec.parse(frame)
                named = named_call(payload)
                if named is not None and not self._refusals.allows(named[1]):
                    self._refuse_tool(conn, *named, payload.get("args"))
                    continue
                request = self._codec.from_dict(payload)
            except MessageDecodeError as exc:
                # The codec bounds nesting and integer digits itself (messages.untrusted): nothing else escapes.
                self._refuse_frame(conn, _request_id_of(frame), exc)
                continue
            if not isinstance(request, RpcRequest):
                wrong = MessageDecodeError(f"expected an RpcRequest, got {type(request).__name__}")
                self._refuse_frame(conn, request.id, wrong)
                continue
            try:
                args = self._admit(request)
            except RpcRefused as exc:
                self._deliver(conn, RpcResponse(id=request.id, error=str(exc)))
                self._record_refusal(conn, request.tool, request.args, str(exc))
                continue
            conn.trio_token.run_sync_soon(self._start_call, conn, request, args)

    def _refuse_tool(self, conn: _Connection, request_id: int, tool: str, args: object) -> None:
        """Answer a call to a tool the script may not call, then count and record it."""
        frame, error = self._refusals.refuse(request_id, tool)
        self._deliver_frame(conn, frame, request_id)
        self._record_refusal(conn, tool, args, error)

    def _record_refusal(self, conn: _Connection, tool: str, args: object, error: str) -> None:
        """Count a refused call and keep its record for the event loop (after the script has its answer)."""
        if self._count_refusal_recorded():
            size = len(_encode_args(args))
            record = SandboxToolCall(tool=tool, args_bytes=size, duration_seconds=0.0, ok=False, error=error)
            conn.refusals.append(record)

    def _refuse_frame(self, conn: _Connection, request_id: int, exc: Exception) -> None:
        error = str(exc)
        self._count_refused()
        self._warn("malformed request", error)
        self._deliver(conn, RpcResponse(id=request_id, error=f"Malformed request: {error}"))

    def _warn(self, what: str, error: str) -> None:
        """Log a rejection, within :data:`MAX_LOGGED_REJECTIONS` per run, cut to :data:`LOGGED_ERROR_CHARS`."""
        with self._counters:
            self._rejections += 1
            logged = self._rejections <= MAX_LOGGED_REJECTIONS
        if logged:
            cut = error if len(error) <= LOGGED_ERROR_CHARS else error[:LOGGED_ERROR_CHARS] + "…"
            log.warning("sandbox RPC: %s: %s", what, cut)

    def _deliver(self, conn: _Connection, response: RpcResponse) -> None:
        """Send ``response`` from the reader thread; what does not fit now is left to a Trio task."""
        self._deliver_frame(conn, self._codec.encode(response), response.id)

    def _deliver_frame(self, conn: _Connection, frame: bytes, request_id: int) -> None:
        try:
            if not conn.outbox.offer(frame):
                if conn.outbox.claim_drain():
                    conn.trio_token.run_sync_soon(conn.calls.start_soon, self._drain, conn)
                # A script that sends without reading its answers gets no more of them queued.
                conn.outbox.wait_for_room(MAX_QUEUED_ANSWER_BYTES)
        except OSError:
            log.info("sandbox RPC: the script hung up before response %d", request_id)

    async def _drain(self, conn: _Connection) -> None:
        try:
            await conn.outbox.drain()
        except OSError:
            log.info("sandbox RPC: the script hung up with %d bytes of answers unsent", conn.outbox.queued_bytes)

    async def _send(self, conn: _Connection, response: RpcResponse) -> None:
        try:
            await conn.outbox.send(self._codec.encode(response))
        except OSError:
            log.info("sandbox RPC: the script hung up before response %d", response.id)

    def _start_call(self, conn: _Connection, request: RpcRequest, args: dict[str, Any]) -> None:
        """In the event loop: run an admitted call in a task of its connection."""
        conn.calls.start_soon(self._answer, request, args, conn, trio.current_time())

    def _pass_on_refusals(self, conn: _Connection) -> None:
        """Record the calls the reader thread refused since the last time, in order."""
        while conn.refusals:
            self._on_tool_call(conn.refusals.popleft())

    def _count_refused(self) -> None:
        with self._counters:
            self._refused += 1

    def _count_refusal_recorded(self) -> bool:
        """Count a refused call; whether it is still within :data:`MAX_RECORDED_REFUSALS` to record."""
        with self._counters:
            self._refused += 1
            if self._recorded_refusals < MAX_RECORDED_REFUSALS:
                self._recorded_refusals += 1
                return True
            self._unrecorded += 1
            return False

    async def _answer(self, request: RpcRequest, args: dict[str, Any], conn: _Connection, started: float) -> None:
        # In a task, so that a failing recorder fails the connection, never Trio's loop.
        self._pass_on_refusals(conn)
        self._in_flight += 1
        try:
            answer = await self._run(request, args)
        finally:
            self._in_flight -= 1
        await self._respond(conn, request, answer, started)

    async def _respond(
        self, conn: _Connection, request: RpcRequest, answer: tuple[RpcResponse, str | None], started: float
    ) -> None:
        """Record the call for the transcript, then send its response."""
        response, error = answer
        self._pass_on_refusals(conn)
        self._on_tool_call(self._call_record(request, trio.current_time() - started, error))
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

    def _admit(self, request: RpcRequest) -> dict[str, Any]:
        """Check a request of an allowed tool against the call limit; count it when admitted."""
        with self._counters:
            # Reader threads of several connections admit at once; the limit must hold across them.
            if self._tool_calls >= self._max_tool_calls:
                raise RpcRefused(
                    f"Tool call limit reached ({self._max_tool_calls}). No more tool calls allowed in this execution."
                )
            self._tool_calls += 1
        if request.tool == "terminal":
            return {k: v for k, v in request.args.items() if k not in TERMINAL_STRIPPED_ARGS}
        return dict(request.args)

    async def _run(self, request: RpcRequest, args: dict[str, Any]) -> tuple[RpcResponse, str | None]:
        """The response to an admitted ``request`` and, when the call failed, why (for the transcript record)."""
        async with self._gate.slot(request.tool, args, self._cwd()):
            deadline = trio.current_time() + self._per_call_timeout
            if deadline >= self._run_deadline:
                return await self._call(request, args)
            with trio.move_on_at(deadline):
                return await self._call(request, args)
        return _failed(request, f"Tool call timed out after {self._per_call_timeout:g}s")

    async def _call(self, request: RpcRequest, args: dict[str, Any]) -> tuple[RpcResponse, str | None]:
        try:
            reply = await self._call_tool(request.tool, args)
        except Exception as exc:
            log.error("sandbox RPC: tool %s raised\n%s", request.tool, self._redact(traceback.format_exc()))
            return _failed(request, self._redact(f"Tool '{request.tool}' failed: {type(exc).__name__}: {exc}"))
        # The tool's own failure is a result the script reads; the reply says it failed, so the
        # transcript records it without the text being parsed.
        return RpcResponse(id=request.id, result=reply.text), reply.error


def _failed(request: RpcRequest, error: str) -> tuple[RpcResponse, str]:
    """An error response the server makes itself (refusal, timeout, crash), with its reason."""
    return RpcResponse(id=request.id, error=error), error


async def _wake_reader_when_cancelled(conn: _Connection) -> None:
    """Sleep until cancelled, then make the connection's reader thread return, wherever it waits."""
    try:
        await trio.sleep_forever()
    finally:
        wake_reader(conn.sock)
        conn.outbox.close()

