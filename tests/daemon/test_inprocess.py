"""The control server in process, on a real socket, with Trio's clock where time matters."""

from __future__ import annotations

import socket
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio
import trio.testing

from actors.platform.daemon.control.server import ControlServer
from control.errors import RequestFailed
from control.paths import DaemonPaths
from actors.platform.daemon.control.service import ControlService
from config.daemon import DaemonConfig
from messages import control as c
from messages.codec import Codec, FrameBuffer
from supervisor import ActorSystem
from supervisor import ChildSpec

DAEMON: Codec[object] = Codec(c.DaemonMessage, max_frame_bytes=1 << 24)
CLIENT: Codec[object] = Codec(c.ClientMessage)


@pytest.fixture
async def control(system: ActorSystem) -> AsyncIterator[DaemonPaths]:
    """A control server under the test system, with no store and no sessions."""
    with tempfile.TemporaryDirectory(prefix="ha-") as base:
        paths = DaemonPaths(Path(base) / "home")
        stops: list[str] = []
        service = ControlService(system=system, paths=paths, config=DaemonConfig(), request_stop=stops.append)
        await system.root.start_child(ChildSpec("control", lambda: ControlServer(paths, service, DaemonConfig())))
        yield paths
        await system.root.terminate_child("control", "test over")
        assert not paths.socket.exists()


async def _connect(paths: DaemonPaths) -> trio.SocketStream:
    sock = trio.socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    await sock.connect(str(paths.socket))
    return trio.SocketStream(sock)


async def _replies(stream: trio.SocketStream) -> list[object]:
    """Everything the server sends until it closes the connection."""
    frames = FrameBuffer(1 << 24)
    out: list[object] = []
    while data := await stream.receive_some(65536):
        frames.feed(data)
        out.extend(DAEMON.decode(frame) for frame in frames.frames())
    return out


async def _exchange(stream: trio.SocketStream, messages: list[object]) -> list[object]:
    """Send ``messages``, then read one reply for each."""
    for message in messages:
        await stream.send_all(CLIENT.encode(message))
    frames = FrameBuffer(1 << 24)
    replies: list[object] = []
    while len(replies) < len(messages):
        frames.feed(await stream.receive_some(65536))
        replies.extend(DAEMON.decode(frame) for frame in frames.frames())
    return replies


class TestHelloDeadline:
    """A client that never says hello is closed after the deadline (on Trio's clock)."""

    async def test_silent_client_is_closed(self, control: DaemonPaths, autojump_clock: trio.testing.MockClock) -> None:
        """After 10 s of silence: not_hello, then the connection ends."""
        stream = await _connect(control)
        started = trio.current_time()
        replies = await _replies(stream)
        assert trio.current_time() - started >= 10
        assert replies == [c.ErrorReply("not_hello", "no Hello within 10 s (daemon.frame_timeout_seconds)")]
        await stream.aclose()


class TestSecondHello:
    """A Hello after the first is refused as invalid, and the connection goes on."""

    async def test_second_hello_is_invalid(self, control: DaemonPaths) -> None:
        """The second Hello gets `invalid` (with no request id: a Hello has none); a Status still works."""
        stream = await _connect(control)
        hello = c.Hello(c.PROTOCOL_VERSION, "test", 1)
        replies = await _exchange(stream, [hello, hello, c.Status("s")])
        assert isinstance(replies[0], c.Welcome)
        assert replies[1] == c.ErrorReply("invalid", "Hello was already received", None)
        assert isinstance(replies[2], c.StatusReply)
        await stream.aclose()


class TestWithoutSessions:
    """A daemon part that is missing answers `unavailable`, and the connection goes on."""

    async def test_unavailable(self, control: DaemonPaths) -> None:
        """Session and store requests get `unavailable`; a Status still works afterwards."""
        stream = await _connect(control)
        replies = await _exchange(
            stream, [c.Hello(c.PROTOCOL_VERSION, "test", 1), c.Attach("a", "s1"), c.ListSessions("b"), c.Status("c")]
        )
        assert isinstance(replies[0], c.Welcome)
        assert replies[1] == c.ErrorReply("unavailable", "this daemon runs no sessions", "a")
        assert replies[2] == c.ErrorReply("unavailable", "this daemon has no session store", "b")
        assert isinstance(replies[3], c.StatusReply) and replies[3].sessions_available is False
        await stream.aclose()


class TestCreateSessionChecks:
    """A session's working directory must be a real absolute directory."""

    async def test_bad_cwd(self, system: ActorSystem) -> None:
        """Relative or missing directories are refused as invalid before any session starts."""
        with tempfile.TemporaryDirectory(prefix="ha-") as base:
            service = ControlService(
                system=system, paths=DaemonPaths(Path(base)), config=DaemonConfig(), request_stop=lambda _: None,
                sessions=_NoSessions(),  # type: ignore[arg-type]  # a stand-in with only what the test reaches of SessionService
            )
            for cwd, text in (("relative/dir", "absolute path"), (f"{base}/missing", "not a directory")):
                with pytest.raises(RequestFailed) as refused:
                    await service.create_session(c.CreateSession("1", cwd))
                assert refused.value.code == "invalid" and text in str(refused.value)


class _NoSessions:
    """A sessions backend that must never be reached."""

    async def create_session(self, options: object) -> str:
        raise AssertionError("a bad request reached the sessions")
