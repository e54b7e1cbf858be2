"""The Unix-socket plumbing the control server and the sandbox RPC server share (messages.sockets)."""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterator

import pytest
import trio

from actors.platform.daemon.control.socket_file import bind_control_socket
from control.errors import SocketSetupError
from control.paths import DaemonPaths
from actors.sandbox import SandboxSetupError
from actors.sandbox.server import bind_listener
from messages.sockets import MAX_SOCKET_PATH_BYTES, SocketPathTooLong, bind_private_listener, peer_uid, request_id_of


@pytest.fixture
def private_dir() -> Iterator[str]:
    with tempfile.TemporaryDirectory(prefix="ha-") as path:
        os.chmod(path, 0o700)
        yield path


class TestBindPrivateListener:
    """A listener is bound 0600 and accepts; a path that cannot be a socket address is refused by name."""

    async def test_bound_private_and_listening(self, private_dir: str) -> None:
        """The socket file is mode 0600 and a client connecting to it is served, its uid ours."""
        path = os.path.join(private_dir, "s.sock")
        listener = await bind_private_listener(path, 4)
        with listener:
            assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
            client = trio.socket.socket(trio.socket.AF_UNIX, trio.socket.SOCK_STREAM)
            with client:
                await client.connect(path)
                accepted, _ = await listener.accept()
                with accepted:
                    assert peer_uid(accepted) == os.getuid()

    async def test_too_long_path_refused(self, private_dir: str) -> None:
        """A path past the limit raises SocketPathTooLong (an OSError) and creates nothing."""
        path = os.path.join(private_dir, "x" * MAX_SOCKET_PATH_BYTES)
        with pytest.raises(SocketPathTooLong, match="too long"):
            await bind_private_listener(path, 4)
        assert not os.path.exists(path)

    async def test_taken_path_is_an_os_error(self, private_dir: str) -> None:
        """Binding over an existing file fails with the OS's error and leaves the file alone."""
        path = os.path.join(private_dir, "taken")
        with open(path, "w") as file:
            file.write("mine")
        with pytest.raises(OSError):
            await bind_private_listener(path, 4)
        with open(path) as file:
            assert file.read() == "mine"


class TestBothServersUseIt:
    """Each server turns the shared binder's errors into its own, with the path in the message."""

    async def test_sandbox_binder_names_a_long_path(self, private_dir: str) -> None:
        """The sandbox's bind_listener reports a too-long path as SandboxSetupError."""
        with pytest.raises(SandboxSetupError, match="socket path too long"):
            await bind_listener(os.path.join(private_dir, "y" * MAX_SOCKET_PATH_BYTES))

    async def test_control_socket_reports_a_taken_path(self, private_dir: str) -> None:
        """A directory where the control socket goes is refused as SocketSetupError naming the path."""
        paths = DaemonPaths(private_dir)
        os.makedirs(paths.run_dir, mode=0o700)
        os.mkdir(paths.socket)
        with pytest.raises(SocketSetupError, match="not a socket"):
            await bind_control_socket(paths)


class TestRequestIdOf:
    """A refused frame's request id is read when it is there, and only then."""

    @pytest.mark.parametrize(
        ("frame", "field", "expected"),
        [
            (b'{"request_id": "r1", "type": "Nope"}', "request_id", "r1"),
            (b'{"id": 7, "method": 1}', "id", 7),
            (b'[1, 2, 3]', "id", None),
            (b"not json", "id", None),
            (b"[" * 100_000 + b"]" * 100_000, "id", None),
            (b'{"id": 1' + b"0" * 10_000 + b"}", "id", None),
        ],
    )
    def test_values(self, frame: bytes, field: str, expected: object) -> None:
        """Objects give their field; arrays, garbage, deep nesting and huge numbers give None."""
        assert request_id_of(frame, field) == expected
