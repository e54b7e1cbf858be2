"""The control socket's limits, on a real daemon in process over real Unix sockets: the
connection cap, and the deadline on a Hello and on a started frame (short configured timeouts)."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

from control.client import ControlClient, encode_request
from control.errors import ProtocolError
from control.paths import DaemonPaths
from messages import control as c
from messages.codec import Codec, FrameBuffer
from providers.scripted import ScriptedProvider, serve_scripted_provider
from tests.api.harness import ApiDaemon, api_daemon, wait_until

DAEMON: Codec[Any] = Codec(c.DaemonMessage, max_frame_bytes=1 << 24)
FRAME_TIMEOUT = 0.5


class Raw:
    """A raw control client on a trio socket: frames out, decoded daemon messages in."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.frames = FrameBuffer(1 << 24)
        self.ready: list[Any] = []

    async def send(self, message: Any) -> None:
        await self.stream.send_all(encode_request(message))

    async def hello(self) -> Any:
        try:
            await self.send(c.Hello(c.PROTOCOL_VERSION, "test", 0))
        except trio.BrokenResourceError:
            pass  # refused and closed before the Hello went out: the reason is still to be read
        return await self.receive()

    async def receive(self) -> Any:
        """The next daemon message; None once the daemon has closed the connection."""
        while not self.ready:
            try:
                data = await self.stream.receive_some(65536)
            except trio.BrokenResourceError:  # ECONNRESET: it closed with our bytes unread
                data = b""
            if not data:
                return None
            self.frames.feed(data)
            self.ready.extend(DAEMON.decode(frame) for frame in self.frames.frames())
        return self.ready.pop(0)

    async def request(self, message: Any) -> Any:
        await self.send(message)
        return await self.receive()


class Door:
    """A running daemon's control socket; every client opened here is closed before the daemon stops."""

    def __init__(self, running: ApiDaemon) -> None:
        self.running = running
        self.paths = DaemonPaths(running.home)
        self.opened: list[Raw] = []

    async def connect(self) -> Raw:
        """A new raw client."""
        sock = trio.socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        await sock.connect(str(self.paths.socket))
        self.opened.append(Raw(trio.SocketStream(sock)))
        return self.opened[-1]

    async def connect_when_below(self, cap: int) -> Raw:
        """A welcomed client, once the server has noticed that fewer than ``cap`` remain open."""
        await wait_until(lambda: self.control()["open"] < cap)
        client = await self.connect()
        assert isinstance(await client.hello(), c.Welcome)
        return client

    def control(self) -> dict[str, Any]:
        """The control server's snapshot details."""
        return self.running.system.lookup("control").statistics().details


@asynccontextmanager
async def daemon(provider: ScriptedProvider, daemon_yaml: str) -> AsyncIterator[Door]:
    """A whole daemon in process with ``daemon_yaml`` under its ``daemon`` section."""
    async with api_daemon(provider, f"daemon:\n{daemon_yaml}" if daemon_yaml else "") as running:
        door = Door(running)
        try:
            yield door
        finally:
            for client in door.opened:
                await client.stream.aclose()


async def _turn_runs(raw: Raw, provider: ScriptedProvider, workdir: Path) -> None:
    """On ``raw``, create a session, send it a message and see its turn finish with the scripted answer."""
    provider.push({"text": "the turn still runs"})
    created = await raw.request(c.CreateSession("1", str(workdir)))
    assert isinstance(created, c.SessionCreated), created
    assert isinstance(await raw.request(c.Attach("2", created.session_id)), c.Attached)
    await raw.send(c.SendMessage("3", created.session_id, "hello"))
    with trio.fail_after(30):
        while True:
            message = await raw.receive()
            assert message is not None
            if type(message).__name__ == "TurnFinished":
                break
    assert message.final_text == "the turn still runs" and message.reason == "completed"


@pytest.fixture
async def provider() -> AsyncIterator[ScriptedProvider]:
    """The scripted provider, in process."""
    async with serve_scripted_provider() as server:
        yield server


class TestConnectionCap:
    """Past daemon.max_connections a client gets a clear busy error and is closed; the rest go on."""

    async def test_300_clients_against_the_default_cap(self, provider: ScriptedProvider, caplog: Any) -> None:
        """256 are welcomed, 44 refused with the cap named; the first still work and a turn runs."""
        async with daemon(provider, "") as door:
            clients = [await door.connect() for _ in range(300)]
            replies = [await client.hello() for client in clients]
            welcomed = [r for r in replies if isinstance(r, c.Welcome)]
            refused = [r for r in replies if isinstance(r, c.ErrorReply)]
            assert len(welcomed) == 256 and all(isinstance(r, c.Welcome) for r in replies[:256])
            assert refused == [c.ErrorReply("busy", "too many connections (daemon.max_connections=256)")] * 44
            assert [await client.receive() for client in clients[256:]] == [None] * 44
            assert isinstance(await clients[0].request(c.Status("s")), c.StatusReply)
            await _turn_runs(clients[1], provider, door.running.workdir)
            control = door.control()
            assert control["open"] == 256 and control["refused_over_cap"] == 44
            assert "daemon.max_connections=256" in caplog.text

    async def test_a_freed_place_is_taken_and_the_cli_client_says_why(self, provider: ScriptedProvider) -> None:
        """The blocking CLI client raises the daemon's reason; once a client leaves, the next one is welcomed."""
        async with daemon(provider, "  max_connections: 3\n") as door:
            clients = [await door.connect() for _ in range(3)]
            assert [type(await client.hello()) for client in clients] == [c.Welcome] * 3
            with pytest.raises(ProtocolError, match=r"too many connections \(daemon.max_connections=3\)"):
                await trio.to_thread.run_sync(ControlClient.connect, door.paths)
            await clients[0].stream.aclose()
            late = await door.connect_when_below(3)
            assert isinstance(await late.request(c.Status("s")), c.StatusReply)


class TestFrameDeadline:
    """A Hello that never comes, or a frame left half sent, costs the client its connection."""

    async def test_half_frame_after_hello_is_dropped(self, provider: ScriptedProvider) -> None:
        """bad_frame after the timeout; an idle client welcomed before it is still served afterwards."""
        async with daemon(provider, f"  frame_timeout_seconds: {FRAME_TIMEOUT}\n") as door:
            idle = await door.connect()
            assert isinstance(await idle.hello(), c.Welcome)
            holder = await door.connect()
            assert isinstance(await holder.hello(), c.Welcome)
            started = trio.current_time()
            await holder.stream.send_all(b'{"type":"Status","request_id":"hal')
            dropped = await holder.receive()
            waited = trio.current_time() - started
            assert isinstance(dropped, c.ErrorReply) and dropped.code == "bad_frame"
            assert "not finished within 0.5 s (daemon.frame_timeout_seconds)" in dropped.message
            assert await holder.receive() is None
            assert FRAME_TIMEOUT <= waited < FRAME_TIMEOUT + 5
            # The idle client sent nothing for longer than the timeout, and that is allowed.
            assert isinstance(await idle.request(c.Status("s")), c.StatusReply)

    async def test_no_hello(self, provider: ScriptedProvider) -> None:
        """A client that connects and says nothing is closed with not_hello."""
        async with daemon(provider, f"  frame_timeout_seconds: {FRAME_TIMEOUT}\n") as door:
            silent = await door.connect()
            assert await silent.receive() == c.ErrorReply("not_hello", "no Hello within 0.5 s (daemon.frame_timeout_seconds)")
            assert await silent.receive() is None

    async def test_half_hello(self, provider: ScriptedProvider) -> None:
        """Half a Hello is no Hello: the client is dropped when the Hello's time is up."""
        async with daemon(provider, f"  frame_timeout_seconds: {FRAME_TIMEOUT}\n") as door:
            client = await door.connect()
            await client.stream.send_all(b'{"type":"Hello","vers')
            reply = await client.receive()
            assert reply == c.ErrorReply("not_hello", "no Hello within 0.5 s (daemon.frame_timeout_seconds)")
            assert await client.receive() is None

    async def test_holders_of_half_frames_cannot_starve_the_daemon(self, provider: ScriptedProvider) -> None:
        """The issue's attack on a small cap: holders fill it, are dropped on time, and a session's turn then runs."""
        config = f"  frame_timeout_seconds: {FRAME_TIMEOUT}\n  max_connections: 20\n"
        async with daemon(provider, config) as door:
            holders = [await door.connect() for _ in range(20)]
            for holder in holders:
                assert isinstance(await holder.hello(), c.Welcome)
            # The cap is full before any half frame's time runs: on a loaded machine the 20 connections can
            # take longer than the timeout, and a holder dropped early would let this one in.
            shut_out = await door.connect()
            assert (await shut_out.hello()).code == "busy"
            for holder in holders:
                await holder.stream.send_all(b'{"type":"Status",')
            for holder in holders:
                assert (await holder.receive()).code == "bad_frame"
                assert await holder.receive() is None
            client = await door.connect_when_below(20)
            await _turn_runs(client, provider, door.running.workdir)


class TestHostileFrames:
    """JSON that Python's decoder cannot hold is a bad frame like any other; the connection goes on."""

    async def test_deep_nesting_and_a_huge_integer(self, provider: ScriptedProvider) -> None:
        async with daemon(provider, "") as door:
            client = await door.connect()
            assert isinstance(await client.hello(), c.Welcome)
            await client.stream.send_all(b"[" * 100_000 + b"\n")
            assert (await client.receive()).code == "bad_frame"
            await client.stream.send_all(b'{"type":"Status","request_id":"7","n":' + b"9" * 100_000 + b"}\n")
            assert (await client.receive()).code == "bad_frame"
            assert isinstance(await client.request(c.Status("s")), c.StatusReply)
