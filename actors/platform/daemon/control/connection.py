"""One control-socket client: its hello, its requests, its attached sessions.

Reading and writing are separate tasks; everything sent goes through one
bounded queue. A reply that finds the queue full drops the client as slow
(``slow_client``). Session events wait for room instead, so a client that
reads slowly pushes back on its subscription, whose hub coalesces deltas and
finally drops the subscriber with a ``SubscriberDropped`` event: a slow client
never slows the session. A frame that cannot be decoded gets a ``bad_frame``
error and the connection goes on; after too many in a row the connection
(never the daemon) is closed. A client must say hello, and finish every frame
it starts, within ``daemon.frame_timeout_seconds``; one that does not is
dropped, so a client holding half a frame cannot keep a descriptor forever.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from types import MappingProxyType
from typing import Any

import attrs
import trio

from actors import Actor
from actors.platform.daemon.control import record_commands
from actors.platform.daemon.control.service import ControlService
from actors.platform.daemon.control.cron_commands import cron_request
from actors.platform.daemon.control.extension_commands import extensions
from actors.platform.daemon.cluster.hosts.host_requests import host_for, localize
from actors.platform.daemon.cluster.peer_requests import peer_for, session_of_request
from actors.platform.daemon.cluster.forwarding import PeerUnreachable
from actors.platform.daemon.control.record_commands import store_errors
from actors.platform.daemon.control.relays import RemoteAttachment, relay_host, relay_peer
from actors.platform.daemon.control.checkpoint_commands import checkpoint_request
from actors.platform.daemon.control.curator_commands import curate
from actors.platform.daemon.control.mcp_commands import mcp_call, mcp_servers, mcp_tools, reload_mcp
from actors.platform.daemon.control.pairing_commands import pairing_request
from control.errors import BadFrame, RequestFailed
from messages import control as c
from messages.codec import Codec, MessageDecodeError
from messages.events import SessionEvent
from messages.framing import FrameReader, FrameTimeout
from messages.session import EventFeed
from messages.sockets import request_id_of
from messages.supervision import ActorState
from store.errors import SessionOwnedElsewhere

__all__ = ["Connection"]

log = logging.getLogger("hermes_actors.control")

# At most this many queued frames go out in one write (a client reads them as they come).
_FRAMES_PER_WRITE = 64


def _request_id_of(frame: bytes) -> str | None:
    # A frame the codec refused may still name its request; echo it so the client can match the error.
    request_id = request_id_of(frame, "request_id")
    return request_id if isinstance(request_id, str) else None


class Connection(Actor[None]):
    """A connected client, at path ``control/conn:<n>``.

    Args:
        stream: the accepted socket.
        service: serves the requests.
        client_codec: decodes the client's frames (its size limit applies).
        daemon_codec: encodes what the daemon sends.
        buffer: frames queued for the client before it counts as slow.
        connections: how many connections are open (for ``status``).
        frame_timeout: seconds the client has for its Hello, and for each frame once started.
        forwards: whether a request for a session another daemon runs is forwarded to it (a local
            client's), or refused (a peer's: see ``peering``).
    """

    kind = "connection"
    #: Consecutive undecodable frames after which the connection is closed.
    max_bad_frames = 100
    #: The longest one request may take before it is answered with an error.
    request_timeout = 60.0
    shutdown_timeout = 2.0

    def __init__(
        self,
        stream: trio.SocketStream,
        service: ControlService,
        client_codec: Codec[c.ClientMessage],
        daemon_codec: Codec[c.DaemonMessage],
        buffer: int,
        connections: Callable[[], int],
        frame_timeout: float,
        *,
        forwards: bool = True,
    ) -> None:
        super().__init__()
        self._forwards = forwards
        self._stream = stream
        self._service = service
        self._decoder = client_codec
        self._encoder = daemon_codec
        self._connections = connections
        self._frame_timeout = frame_timeout
        self._out_send, self._out_receive = trio.open_memory_channel[bytes](buffer)
        # Invariant: once set, nothing more is queued; the writer sends this error last and closes.
        self._closing: c.ErrorReply | None = None
        # Invariant: True when the queued frames are abandoned (the client is too slow for them).
        self._skip_queued = False
        self._attached: dict[str, tuple[EventFeed | RemoteAttachment, trio.CancelScope]] = {}
        self._tasks: trio.Nursery | None = None
        self._client = "?"
        self.requests = 0
        self.bad_frames = 0
        self.writes = 0
        self.frames_sent = 0

    def snapshot_details(self) -> dict[str, Any]:
        return {
            "client": self._client,
            "requests": self.requests,
            "bad_frames": self.bad_frames,
            "attached": sorted(self._attached),
            "queued_frames": self._out_send.statistics().current_buffer_used,
            "frames_sent": self.frames_sent,
            "writes": self.writes,
        }

    # -- sending --------------------------------------------------------------------------------

    def send(self, message: c.DaemonMessage) -> None:
        """Queue ``message``; a full queue drops the client as slow."""
        if self._closing is not None:
            return
        try:
            self._out_send.send_nowait(self._encoder.encode(message))
        except trio.WouldBlock:
            limit = self._out_send.statistics().max_buffer_size
            self._skip_queued = True
            self.close_with("slow_client", f"the client fell {limit} frames behind and was dropped")

    async def send_event(self, event: SessionEvent) -> None:
        """Queue a session event, waiting for room only when the queue is full (the session's hub bounds the
        wait): a burst of events is queued without a task switch per event."""
        if self._closing is None:
            await self.send_frame(self._encoder.encode(event))

    async def send_frame(self, frame: bytes) -> None:
        """Queue an encoded event as ``send_event`` does (a session host's, relayed as it came)."""
        if self._closing is None:
            try:
                try:
                    self._out_send.send_nowait(frame)
                except trio.WouldBlock:
                    await self._out_send.send(frame)
            except (trio.ClosedResourceError, trio.BrokenResourceError):
                pass

    def close_with(self, code: str, message: str) -> None:
        """Close the connection once ``ErrorReply(code, message)`` is sent."""
        if self._closing is None:
            log.warning("closing %s (%s): %s", self.path, self._client, message)
            self._closing = c.ErrorReply(code, message)
            self._out_send.close()

    async def _write_loop(self, done: trio.CancelScope) -> None:
        try:
            async for frame in self._out_receive:
                if self._skip_queued:
                    break
                await self._stream.send_all(self._with_queued(frame))
            if self._closing is not None:
                with trio.move_on_after(1):
                    await self._stream.send_all(self._encoder.encode(self._closing))
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        finally:
            done.cancel(reason="connection closed")

    def _with_queued(self, frame: bytes) -> bytes:
        """``frame`` and the frames queued behind it, as one write: one syscall per burst, not per event."""
        frames = [frame]
        while len(frames) < _FRAMES_PER_WRITE:
            try:
                frames.append(self._out_receive.receive_nowait())
            except (trio.WouldBlock, trio.EndOfChannel):
                break
        self.writes += 1
        self.frames_sent += len(frames)
        return frames[0] if len(frames) == 1 else b"".join(frames)

    # -- the loop ---------------------------------------------------------------------------------

    async def main(self) -> None:
        self.state = ActorState.RUNNING
        try:
            async with trio.open_nursery() as nursery:
                self._tasks = nursery
                nursery.start_soon(self._write_loop, nursery.cancel_scope)
                reader = FrameReader(self._stream, self._decoder.max_frame_bytes, self._frame_timeout)
                try:
                    if await self._hello(reader):
                        await self._serve(reader)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    pass
                self._out_send.close()
        finally:
            self._tasks = None
            for subscription, scope in self._attached.values():
                subscription.close()
                scope.cancel()
            self._attached.clear()

    async def on_stop(self) -> None:
        # Synchronous: teardown must not checkpoint (a Cancelled could hide the real error).
        self._stream.socket.close()

    async def _next(self, reader: FrameReader) -> c.ClientMessage | None:
        """The next message; None at end of stream, or once a started frame timed out (the
        connection is then closing with ``bad_frame``).

        Raises:
            BadFrame: the frame could not be decoded (an oversized one included).
        """
        try:
            frame = await reader.receive_frame()
        except FrameTimeout as exc:
            self.close_with("bad_frame", f"{exc} (daemon.frame_timeout_seconds); closing the connection")
            return None
        except MessageDecodeError as exc:
            raise BadFrame(str(exc), None) from exc
        if frame is None:
            return None
        try:
            return self._decoder.decode(frame)
        except MessageDecodeError as exc:
            # The codec bounds nesting and integer digits itself (messages.untrusted): nothing else escapes.
            raise BadFrame(str(exc), _request_id_of(frame)) from exc

    async def _hello(self, reader: FrameReader) -> bool:
        message: c.ClientMessage | None = None
        with trio.move_on_after(self._frame_timeout) as waited:
            try:
                message = await self._next(reader)
            except BadFrame as exc:
                self.close_with("not_hello", f"the first frame must be a Hello: {exc}")
                return False
        if waited.cancelled_caught:
            self.close_with("not_hello", f"no Hello within {self._frame_timeout:g} s (daemon.frame_timeout_seconds)")
            return False
        if message is None:
            return False
        if not isinstance(message, c.Hello):
            self.close_with("not_hello", f"the first frame must be a Hello, got {type(message).__name__}")
            return False
        if message.version != c.PROTOCOL_VERSION:
            self.close_with(
                "version_mismatch",
                f"the client speaks protocol {message.version}, this daemon {c.PROTOCOL_VERSION}: upgrade the older one",
            )
            return False
        self._client = f"{message.client} (pid {message.pid})"
        self.send(c.Welcome(c.PROTOCOL_VERSION, os.getpid(), self.path))
        return True

    async def _serve(self, reader: FrameReader) -> None:
        in_a_row = 0
        while self._closing is None:
            try:
                message = await self._next(reader)
            except BadFrame as exc:
                self.bad_frames += 1
                in_a_row += 1
                log.info("%s: bad frame: %s", self.path, exc)
                self.send(c.ErrorReply("bad_frame", str(exc), exc.request_id))
                if in_a_row >= self.max_bad_frames:
                    self.close_with("bad_frame", f"{in_a_row} bad frames in a row; closing the connection")
                continue
            if message is None:
                return
            in_a_row = 0
            await self._dispatch(message)

    async def _dispatch(self, message: c.ClientMessage) -> None:
        self.requests += 1
        request_id = getattr(message, "request_id", None)
        self.activity = type(message).__name__
        # A session host's MCP call is bounded by the server entry's own timeout (120 s by default).
        bound = math.inf if isinstance(message, c.McpCall) else self.request_timeout
        try:
            with trio.fail_after(bound):
                if isinstance(message, c.Hello):
                    raise RequestFailed("invalid", "Hello was already received")
                try:
                    if not await self._to_host(message) and not await self._to_peer(message):
                        await self._serve_one(message)
                except SessionOwnedElsewhere as elsewhere:
                    await self._elsewhere(message, elsewhere)
        except RequestFailed as exc:
            self.send(c.ErrorReply(exc.code, str(exc), request_id))
        except trio.TooSlowError:
            too_long = f"{type(message).__name__} took longer than {self.request_timeout:g} s"
            self.send(c.ErrorReply("internal", too_long, request_id))
        except Exception as exc:
            log.error("%s: %s failed", self.path, type(message).__name__, exc_info=exc)
            # The class and traceback are in the log; the client is told what failed, in words.
            self.send(c.ErrorReply("internal", f"the daemon failed serving this request: {exc} (see logs/daemon.log)", request_id))
        finally:
            self.activity = ""

    async def _serve_one(self, message: c.ClientRequest) -> None:
        service = self._service
        match message:
            case c.Tree():
                self.send(service.tree(message))
            case c.Inspect():
                self.send(service.inspect(message))
            case c.Kill():
                self.send(service.kill(message))
            case c.Status():
                self.send(await service.status(message, self._connections()))
            case c.McpServers():
                self.send(mcp_servers(service.system, message))
            case c.McpTools():
                self.send(await mcp_tools(service.system, message))
            case c.McpCall():
                self.send(await mcp_call(service.system, message))
            case c.ReloadMcp():
                self.send(await reload_mcp(service.system, service.paths, message))
            case c.CronRequest():
                self.send(await cron_request(service.system, message))
            case c.PairingRequest():
                self.send(await pairing_request(service.system, service.outbound, message))
            case c.StopDaemon():
                self.send(service.stop_daemon(message))
            case c.Attach():
                await self._attach(message)
            case c.Detach():
                self._detach(message.session_id)
                self.send(c.Ok(message.request_id, f"detached from {message.session_id}"))
            case c.ExportSession():
                async for chunk in record_commands.export_session(service, message):
                    self.send(chunk)
            case c.AnswerSessionRequest():
                # Shown to every client and to the model: the program that answered, not our actor path.
                by = f"{self._client}: {message.on_behalf}" if message.on_behalf else f"the user at {self._client}"
                self.send(await service.answer(message, by))
            case _:
                handler = _ASYNC_HANDLERS.get(type(message))
                if handler is None:
                    raise RequestFailed("invalid", f"{type(message).__name__} is not a request")
                self.send(await handler(service, message))

    async def _to_host(self, message: c.ClientRequest) -> bool:
        """Serve ``message`` through the session host it belongs to (``daemon.hosts``); whether it was."""
        router = self._service.hosts
        # A peer's request too: a front's hosts are its own, so this is no second forward.
        if router is None:
            return False
        if isinstance(message, c.Status):
            status = await self._service.status(message, self._connections())
            self.send(await router.with_hosts(status, self._service.config.hosts))
            return True
        target = await host_for(self._service, router, message)
        if target is None:
            if not isinstance(message, c.Tree):
                return False
            # The front's tree, each host's own under its node.
            reply = self._service.tree(message)
            self.send(attrs.evolve(reply, tree=await router.graft(reply.tree, reply.now)))
            return True
        index, routed = target
        if isinstance(routed, c.Attach):
            assert self._tasks is not None
            await self._tasks.start(relay_host, self, router, routed, index)
            return True
        try:
            reply = await router.request(index, routed)
        except RequestFailed:
            localize(router, index, routed, None)
            raise
        self.send(localize(router, index, routed, reply))
        return True

    async def _to_peer(self, message: c.ClientRequest) -> bool:
        """Serve ``message`` through the peer daemon it belongs to (remembered, or ``peer_requests``);
        whether it was."""
        peers = self._service.peers
        if peers is None or not self._forwards:
            return False
        session_id = session_of_request(message)
        remembered = peers.owner(session_id) if session_id is not None else None
        if session_id is not None and remembered is not None and not self._service.is_live(session_id):
            return await self._to_remembered(message, session_id, remembered)
        with store_errors():
            address = await peer_for(self._service, message)
        if address is None:
            return False
        reply = await peers.forward(address, message)
        if isinstance(reply, c.SessionCreated):
            peers.remember(reply.session_id, address)
        elif session_id is not None and not isinstance(reply, c.ErrorReply):
            peers.remember(session_id, address)
        self.send(reply)
        return True

    async def _to_remembered(self, message: c.ClientRequest, session_id: str, address: str) -> bool:
        """Forward to where the session ran last time; False when it is not there any more (the peer is
        gone, or answers that another host runs it), so the request is served as if nothing were known."""
        peers = self._service.peers
        assert peers is not None and self._tasks is not None
        try:
            if isinstance(message, c.Attach):
                await self._tasks.start(relay_peer, self, peers, message, address)
                return True
            reply = await peers.forward(address, message)
        except PeerUnreachable:
            peers.forget(session_id)
            return False
        if isinstance(reply, c.ErrorReply) and reply.code in ("unavailable", "not_found"):
            peers.forget(session_id)
            return False
        self.send(reply)
        return True

    async def _elsewhere(self, message: c.ClientRequest, elsewhere: SessionOwnedElsewhere) -> None:
        """A request for a session another daemon runs: forwarded to it when it can be."""
        peers = self._service.peers
        if not self._forwards or peers is None or elsewhere.address is None:
            raise RequestFailed("unavailable", str(elsewhere))
        if isinstance(message, c.Attach):
            assert self._tasks is not None
            await self._tasks.start(relay_peer, self, peers, message, elsewhere.address)
        else:
            self.send(await peers.forward(elsewhere.address, message))
        session_id = getattr(message, "session_id", None)
        if isinstance(session_id, str):
            peers.remember(session_id, elsewhere.address)

    # -- attached sessions ----------------------------------------------------------------------------

    @contextmanager
    def attachment(self, session_id: str, handle: RemoteAttachment) -> Iterator[trio.CancelScope]:
        """Count a relayed attachment as this connection's while the block runs; ``Detach`` (or the
        connection closing) cancels the scope it yields."""
        with trio.CancelScope() as scope:
            self._attached[session_id] = (handle, scope)
            try:
                yield scope
            finally:
                if self._attached.get(session_id, (None,))[0] is handle:
                    del self._attached[session_id]

    async def _attach(self, request: c.Attach) -> None:
        # A title names the session as well as its id; the reply gives the id the events carry.
        request = attrs.evolve(request, session_id=await self._service.session_id_for(request.session_id))
        self._detach(request.session_id)
        subscription = await self._service.subscribe(request, self.path)
        self.send(c.Attached(request.request_id, request.session_id))
        assert self._tasks is not None
        await self._tasks.start(self._forward, request.session_id, subscription)

    def _detach(self, session_id: str) -> None:
        entry = self._attached.pop(session_id, None)
        if entry is not None:
            subscription, scope = entry
            subscription.close()
            scope.cancel()

    async def _forward(self, session_id: str, subscription: EventFeed, *, task_status: trio.TaskStatus[None]) -> None:
        with trio.CancelScope() as scope:
            self._attached[session_id] = (subscription, scope)
            task_status.started()
            try:
                async for event in subscription:
                    await self.send_event(event)
            finally:
                # However the forwarding ends (detach, a dropped connection, shutdown), the
                # session must stop counting this subscriber or it could never hibernate.
                subscription.close()
                if self._attached.get(session_id, (None,))[0] is subscription:
                    del self._attached[session_id]


_ASYNC_HANDLERS: Mapping[type, Callable[[ControlService, Any], Any]] = MappingProxyType({
    c.CreateSession: ControlService.create_session,
    c.SendMessage: ControlService.send_message,
    c.InterruptSession: ControlService.interrupt,
    c.SteerSession: ControlService.steer,
    c.CompressSession: ControlService.compress,
    c.ResetSessionTools: ControlService.reset_tools,
    c.SetSessionYolo: ControlService.set_yolo,
    c.ListSessions: record_commands.list_sessions,
    c.SearchSessions: record_commands.search_sessions,
    c.ShowSession: record_commands.show_session,
    c.DeleteSession: record_commands.delete_session,
    c.CheckpointRequest: checkpoint_request,
    c.CurateRequest: curate,
    c.Extensions: extensions,
})
