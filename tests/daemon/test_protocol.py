"""The control socket's conversation: hello, hostile input, slow clients, peer checks."""

from __future__ import annotations

import json
import os
import random
import resource
import socket
import time
from pathlib import Path

import pytest

from control.errors import DaemonNotRunning, RequestFailed, VersionMismatch
from control.paths import DaemonPaths
from messages import control as c
from messages.codec import Codec, FrameBuffer
from tests.daemon.helpers import DaemonProcess

DAEMON_CODEC: Codec[object] = Codec(c.DaemonMessage, max_frame_bytes=1 << 28)


class RawConnection:
    """A socket speaking raw bytes to the daemon, decoding what comes back."""

    def __init__(self, paths: DaemonPaths) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(10)
        self.sock.connect(str(paths.socket))
        self.frames = FrameBuffer(1 << 28)
        self.pending: list[bytes] = []

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def hello(self, version: int = c.PROTOCOL_VERSION) -> object:
        self.send(json.dumps({"type": "Hello", "version": version, "client": "raw", "pid": os.getpid()}).encode() + b"\n")
        return self.receive()

    def receive(self) -> object:
        """The next message; raises EOFError when the daemon closed."""
        while not self.pending:
            data = self.sock.recv(65536)
            if not data:
                raise EOFError
            self.frames.feed(data)
            self.pending.extend(self.frames.frames())
        return DAEMON_CODEC.decode(self.pending.pop(0))

    def close(self) -> None:
        self.sock.close()


def _malformed_frames(count: int, seed: int = 8) -> list[bytes]:
    """Random bytes, oversized frames, wrong field types, unknown types and non-objects."""
    rng = random.Random(seed)
    frames: list[bytes] = []
    for index in range(count):
        match index % 6:
            case 0:
                frames.append(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200))).replace(b"\n", b"") + b"\n")
            case 1:
                frames.append(b"{" + b"x" * (1024 * 1024 + rng.randrange(1000)) + b"\n")
            case 2:
                frames.append(json.dumps({"type": "Tree", "request_id": 5, "path": []}).encode() + b"\n")
            case 3:
                frames.append(json.dumps({"type": f"Nope{index}", "request_id": str(index)}).encode() + b"\n")
            case 4:
                frames.append(json.dumps([index, "Tree"]).encode() + b"\n")
            case _:
                frames.append(json.dumps({"type": "Kill", "request_id": str(index), "path": None}).encode() + b"\n")
    return frames


class TestHello:
    """Every connection opens with a versioned hello."""

    def test_welcome(self, shared_daemon: DaemonProcess) -> None:
        """A Hello of our version gets a Welcome naming the connection actor."""
        with shared_daemon.client() as client:
            assert client.welcome.version == c.PROTOCOL_VERSION
            assert client.welcome.connection.startswith("control/conn:")

    def test_version_mismatch(self, shared_daemon: DaemonProcess) -> None:
        """Another protocol version is refused with version_mismatch and the connection closed."""
        raw = RawConnection(shared_daemon.paths)
        reply = raw.hello(version=c.PROTOCOL_VERSION + 1)
        assert isinstance(reply, c.ErrorReply)
        assert reply.code == "version_mismatch"
        assert str(c.PROTOCOL_VERSION + 1) in reply.message
        with pytest.raises(EOFError):
            raw.receive()
        raw.close()

    def test_request_before_hello(self, shared_daemon: DaemonProcess) -> None:
        """A request before the Hello is refused with not_hello and the connection closed."""
        raw = RawConnection(shared_daemon.paths)
        raw.send(b'{"type": "Tree", "request_id": "1", "path": ""}\n')
        reply = raw.receive()
        assert isinstance(reply, c.ErrorReply) and reply.code == "not_hello"
        with pytest.raises(EOFError):
            raw.receive()
        raw.close()

    def test_version_mismatch_raises_in_the_client(self, shared_daemon: DaemonProcess, monkeypatch: pytest.MonkeyPatch) -> None:
        """The Python client turns the refusal into VersionMismatch."""
        monkeypatch.setattr(c, "PROTOCOL_VERSION", c.PROTOCOL_VERSION + 7)
        with pytest.raises(VersionMismatch, match="protocol"):
            shared_daemon.client()


class TestMalformedInput:
    """Hostile frames get errors; the connection may go, the daemon never does."""

    def test_a_thousand_malformed_frames(self, shared_daemon: DaemonProcess) -> None:
        """1,000 bad frames each get a bad_frame error (ids echoed when readable); a normal client is then served."""
        frames = _malformed_frames(1000)
        errors: list[c.ErrorReply] = []
        raw: RawConnection | None = None
        for frame in frames:
            if raw is None:
                raw = RawConnection(shared_daemon.paths)
                assert isinstance(raw.hello(), c.Welcome)
            raw.send(frame)
            reply = raw.receive()
            assert isinstance(reply, c.ErrorReply), reply
            errors.append(reply)
            if len(errors) % 90 == 0:  # stay under the in-a-row limit: a fresh connection
                raw.close()
                raw = None
        assert raw is not None
        raw.close()
        assert len(errors) == 1000
        assert {e.code for e in errors} == {"bad_frame"}
        assert any("exceeds the limit" in e.message for e in errors)
        assert any("unknown message type" in e.message for e in errors)
        assert any(e.request_id == "3" and "unknown message type 'Nope3'" in e.message for e in errors)
        assert any("expected a string" in e.message for e in errors)
        with shared_daemon.client() as client:
            status = client.request(c.Status(client.next_id()))
        assert isinstance(status, c.StatusReply)
        assert shared_daemon.process is not None and shared_daemon.process.poll() is None

    def test_too_many_bad_frames_in_a_row_close_the_connection(self, shared_daemon: DaemonProcess) -> None:
        """After 100 bad frames in a row the connection is closed with a reason."""
        raw = RawConnection(shared_daemon.paths)
        raw.hello()
        raw.send(b"garbage\n" * 150)
        replies: list[object] = []
        with pytest.raises(EOFError):
            while True:
                replies.append(raw.receive())
        raw.close()
        assert len(replies) == 101
        last = replies[-1]
        assert isinstance(last, c.ErrorReply) and "100 bad frames in a row" in last.message

    def test_valid_frame_with_a_bad_value(self, shared_daemon: DaemonProcess) -> None:
        """A well-formed request naming nothing real gets not_found, and the connection goes on."""
        with shared_daemon.client() as client:
            with pytest.raises(RequestFailed) as failed:
                client.request(c.Inspect(client.next_id(), "no/such/actor"))
            assert failed.value.code == "not_found"
            assert isinstance(client.request(c.Status(client.next_id())), c.StatusReply)


class TestSlowClient:
    """A client that never reads is dropped with a reason; others are unaffected."""

    def test_slow_client_dropped(self, shared_daemon: DaemonProcess) -> None:
        """Thousands of unread replies overflow the queue: slow_client, then the connection ends."""
        raw = RawConnection(shared_daemon.paths)
        raw.hello()
        request = b'{"type": "Tree", "request_id": "t", "path": ""}\n'
        raw.sock.settimeout(0.5)
        sent = 0
        try:
            for _ in range(20):
                raw.sock.sendall(request * 500)
                sent += 500
        except (TimeoutError, BrokenPipeError, ConnectionResetError):
            pass
        # Read nothing until the daemon has given up on us (reading earlier would let it catch up).
        deadline = time.monotonic() + 30
        while "frames behind" not in shared_daemon.log():
            assert time.monotonic() < deadline, "the slow client was never dropped"
            time.sleep(0.1)
        raw.sock.settimeout(10)
        last: object = None
        try:
            while True:
                last = raw.receive()
        except (EOFError, ConnectionResetError):
            pass
        raw.close()
        assert isinstance(last, c.ErrorReply)
        assert last.code == "slow_client"
        assert "frames behind" in last.message
        with shared_daemon.client() as client:
            assert isinstance(client.request(c.Status(client.next_id())), c.StatusReply)


class TestDescriptorExhaustion:
    """Running out of file descriptors refuses connections for a while; the daemon survives."""

    def test_emfile(self, home: Path) -> None:
        """With a low descriptor limit and a flood of clients, accept fails; afterwards a client is served."""
        def low_limit() -> None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (160, 160))

        daemon = DaemonProcess(home)
        daemon.preexec = low_limit
        daemon.start()
        flood: list[socket.socket] = []
        try:
            for _ in range(300):
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sock.connect(str(daemon.paths.socket))
                flood.append(sock)
            deadline = time.monotonic() + 20
            while "Too many open files" not in daemon.log():  # trio's serve_listeners says it, then waits
                assert time.monotonic() < deadline, "the daemon never ran out of descriptors"
                time.sleep(0.1)
            for sock in flood:
                sock.close()
            flood.clear()
            deadline = time.monotonic() + 20
            while True:
                try:
                    with daemon.client() as client:
                        assert isinstance(client.request(c.Status(client.next_id())), c.StatusReply)
                    break
                except (RequestFailed, OSError, DaemonNotRunning):
                    assert time.monotonic() < deadline
                    time.sleep(0.2)
            assert daemon.process is not None and daemon.process.poll() is None
        finally:
            for sock in flood:
                sock.close()
            daemon.stop()
