"""The RPC server of one execute_code run: a Unix socket the child's ``hermes_tools`` stub calls.

A connection starts with the run's token and a newline, nothing else: the server reads exactly that
many bytes, within :data:`HANDSHAKE_SECONDS`, and compares them in constant time before it decodes
anything, so a peer without the token never reaches the JSON decoder. Then every frame is a
:class:`messages.rpc.RpcRequest`; the answer is an :class:`RpcResponse` with the same id. Requests of
one connection run concurrently, each admitted by the session's tool gate (the rules of a parallel
batch), so a script's threads get real parallelism where it is safe. Nothing a peer sends can stop
the server or the run: a bad frame gets an error response; a wrong, missing or late token, or
anything that breaks a connection, gets an error response, a log line, and that connection closed.
"""

from __future__ import annotations

import hmac
import json
import logging
import math
import os
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Protocol

import attrs
import trio

from actors.sandbox.errors import RpcAuthError, RpcRefused, SandboxSetupError
from actors.sandbox.result import SandboxToolCall
from actors.sandbox.stubs import SANDBOX_ALLOWED_TOOLS, SANDBOX_EXCLUDED_TOOLS, TERMINAL_STRIPPED_ARGS
from tools.results import ToolReply
from messages.codec import Codec, MessageDecodeError
from messages.framing import FrameReader
from messages.rpc import RpcMessage, RpcRequest, RpcResponse
from messages.sockets import SocketPathTooLong, bind_private_listener, peer_uid, request_id_of

log = logging.getLogger(__name__)

#: Largest request frame the server reads (a write_file of a big file still fits).
MAX_REQUEST_BYTES = 8 * 1024 * 1024
#: Seconds a new connection has to present the token before it is closed.
HANDSHAKE_SECONDS = 5.0

CallTool = Callable[[str, dict[str, Any]], Awaitable[ToolReply]]
"""The session's tool-execution path: a tool name and its arguments to the call's reply."""


class ToolGate(Protocol):
    """Admits one tool call at a time where running it beside the others is safe.

    :class:`tools.parallel.ToolConcurrencyGate` is the implementation the session passes.
    """

    def slot(self, name: str, args: Mapping[str, Any], cwd: str) -> AbstractAsyncContextManager[None]:
        """Wait until ``name(args)`` may run; hold the place for the body of the ``async with``."""
        ...


class SerialGate:
    """The fallback gate: one call at a time, whatever the tool (Hermes Agent's behaviour)."""

    def __init__(self) -> None:
        self._lock = trio.StrictFIFOLock()

    @asynccontextmanager
    async def slot(self, name: str, args: Mapping[str, Any], cwd: str) -> AsyncIterator[None]:
        """Wait for every earlier call to finish."""
        async with self._lock:
            yield


@attrs.frozen
class RpcServerStatistics:
    """A snapshot of the server for the actor tree.

    Attributes:
        tool_calls: Calls dispatched so far (refused ones not counted).
        in_flight: Calls running or waiting for the gate now.
        refused: Requests answered with an error before dispatch (bad tool, limit, token, frame).
        connections: Connections accepted so far.
    """

    tool_calls: int
    in_flight: int
    refused: int
    connections: int


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
    """One client connection: its stream, frame reader, send lock and the nursery of its calls."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.reader = FrameReader(stream, MAX_REQUEST_BYTES)
        # Invariant: whoever writes a response holds this lock until the whole frame is written.
        self.send_lock = trio.StrictFIFOLock()
        self.calls: trio.Nursery


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
        self._allowed = allowed_tools
        self._available = ", ".join(sorted(allowed_tools)) or "(none)"
        self._preamble = token.encode() + b"\n"
        self._handshake_timeout = handshake_timeout
        self._max_tool_calls = max_tool_calls
        self._per_call_timeout = per_call_timeout
        self._run_deadline = run_deadline
        self._gate: ToolGate = gate if gate is not None else SerialGate()
        self._cwd = cwd
        self._on_tool_call = on_tool_call
        self._known = known_tools | allowed_tools
        self._redact = redact
        self._expected_uid = os.getuid() if expected_uid is None else expected_uid
        self._codec: Codec[RpcMessage] = Codec(RpcMessage, max_frame_bytes=MAX_REQUEST_BYTES)
        self._tool_calls = 0
        self._in_flight = 0
        self._refused = 0
        self._connections = 0

    @property
    def tool_calls(self) -> int:
        """Calls dispatched so far."""
        return self._tool_calls

    def statistics(self) -> RpcServerStatistics:
        """A snapshot of the server's counters."""
        return RpcServerStatistics(self._tool_calls, self._in_flight, self._refused, self._connections)

    async def serve(
        self, listener: trio.socket.SocketType, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Accept connections on ``listener`` and serve them until cancelled; closes the listener."""
        with listener:
            async with trio.open_nursery() as nursery:
                task_status.started()
                while True:
                    conn, _ = await listener.accept()
                    self._connections += 1
                    nursery.start_soon(self._serve_connection, trio.SocketStream(conn))

    async def _serve_connection(self, stream: trio.SocketStream) -> None:
        async with stream:
            conn = _Connection(stream)
            try:
                self._check_peer(stream.socket)
                await self._authenticate(stream)
            except RpcAuthError as exc:
                log.warning("sandbox RPC: refusing connection: %s", exc)
                self._refused += 1
                await self._send(conn, RpcResponse(id=0, error=str(exc)))
                return
            try:
                async with trio.open_nursery() as conn.calls:
                    conn.calls.start_soon(self._read_next, conn)
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

    async def _read_next(self, conn: _Connection) -> None:
        """Read the connection's next requests; hand reading on to a new task at the first admitted one,
        and answer it.

        The task that read a request answers it itself, so the answer does not wait for a scheduler
        pass to start a task; the reader it starts runs while the tool does. A refused request needs
        no task: it is answered at once, and this task reads on.
        """
        while True:
            request = await self._next_request(conn)
            if request is None:
                return
            started = trio.current_time()
            try:
                args = self._admit(request)
            except RpcRefused as exc:
                self._refused += 1
                await self._respond(conn, request, _failed(request, str(exc)), started)
                continue
            conn.calls.start_soon(self._read_next, conn)
            await self._answer(request, args, conn, started)
            return

    async def _next_request(self, conn: _Connection) -> RpcRequest | None:
        """The next well-formed request (malformed frames are answered on the way); None at the end."""
        while True:
            try:
                frame = await conn.reader.receive_frame()
            except MessageDecodeError as exc:
                await self._refuse_frame(conn, 0, exc)
                continue
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                return None
            if frame is None:
                return None
            try:
                request = self._codec.decode(frame)
            except MessageDecodeError as exc:
                # The codec bounds nesting and integer digits itself (messages.untrusted): nothing else escapes.
                await self._refuse_frame(conn, _request_id_of(frame), exc)
                continue
            if not isinstance(request, RpcRequest):
                exc = MessageDecodeError(f"expected an RpcRequest, got {type(request).__name__}")
                await self._refuse_frame(conn, request.id, exc)
                continue
            return request

    def _check_peer(self, sock: trio.socket.SocketType) -> None:
        uid = peer_uid(sock)
        if uid is not None and uid != self._expected_uid:
            raise RpcAuthError(f"peer uid {uid} is not the daemon's uid {self._expected_uid}")

    async def _refuse_frame(self, conn: _Connection, request_id: int, exc: Exception) -> None:
        log.warning("sandbox RPC: malformed request: %s", exc)
        self._refused += 1
        await self._send(conn, RpcResponse(id=request_id, error=f"Malformed request: {exc}"))

    async def _send(self, conn: _Connection, response: RpcResponse) -> None:
        data = self._codec.encode(response)
        stream, send_lock = conn.stream, conn.send_lock
        try:
            if not send_lock.locked():
                # Fast path: a response fits the socket buffer almost always, so write it now without
                # the two scheduler round trips of the lock and send_all; the task has checkpointed
                # already (the gate, the tool).
                send_lock.acquire_nowait()
                try:
                    sent = os.write(stream.socket.fileno(), data)
                except BlockingIOError:
                    sent = 0
                try:
                    if sent < len(data):
                        await stream.send_all(data[sent:])
                finally:
                    send_lock.release()
                return
            async with send_lock:
                await stream.send_all(data)
        except (OSError, trio.BrokenResourceError, trio.ClosedResourceError):
            log.info("sandbox RPC: the script hung up before response %d", response.id)

    async def _answer(self, request: RpcRequest, args: dict[str, Any], conn: _Connection, started: float) -> None:
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
        self._on_tool_call(
            SandboxToolCall(
                tool=request.tool,
                args_bytes=len(json.dumps(request.args, ensure_ascii=False)),
                duration_seconds=trio.current_time() - started,
                ok=error is None,
                error=error,
            )
        )
        await self._send(conn, response)

    def _admit(self, request: RpcRequest) -> dict[str, Any]:
        """Check a request against the allow-list and the call limit; count it when admitted."""
        available = self._available
        if request.tool not in self._allowed:
            if request.tool in self._known:
                raise RpcRefused(
                    f"Tool '{request.tool}' is not available in execute_code. Use it as a normal tool call "
                    f"instead. Available in execute_code: {available}"
                )
            raise RpcRefused(f"Unknown tool: {request.tool}. Available: {available}")
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
