"""A blocking control-socket client for the CLI: no Trio, no SDKs, fast to import.

::

    with ControlClient.connect(DaemonPaths(home)) as client:
        reply = client.request(Tree(client.next_id()))

Replies are matched to requests by ``request_id``; session events that arrive
meanwhile are kept, in order, for :meth:`ControlClient.receive`.
"""

from __future__ import annotations

import itertools
import os
import socket
from collections import deque
from typing import Any

from actors.platform.errors import DaemonNotRunning, ProtocolError, RequestFailed, VersionMismatch
from actors.platform.paths import DaemonPaths
from messages import control as c
from messages.codec import Codec, FrameBuffer, MessageDecodeError

__all__ = ["CLIENT_FRAME_LIMIT", "ControlClient"]

#: The daemon is trusted; its frames (a large tree) may be big.
CLIENT_FRAME_LIMIT = 256 * 1024 * 1024
_READ_SIZE = 256 * 1024


class ControlClient:
    """One connection to the daemon, after a successful Hello.

    Args:
        sock: a connected Unix socket.
        client: how the client names itself in the daemon's tree.
    """

    def __init__(self, sock: socket.socket, client: str = "hermes-actors") -> None:
        self._sock = sock
        self._to_daemon: Codec[Any] = Codec(c.ClientMessage)
        self._from_daemon: Codec[Any] = Codec(c.DaemonMessage, max_frame_bytes=CLIENT_FRAME_LIMIT)
        self._frames = FrameBuffer(CLIENT_FRAME_LIMIT)
        self._pending: deque[bytes] = deque()
        self._unclaimed: deque[Any] = deque()
        self._ids = itertools.count(1)
        self.welcome = self._hello(client)

    @classmethod
    def connect(cls, paths: DaemonPaths, client: str = "hermes-actors", timeout: float | None = 10.0) -> ControlClient:
        """Connect and say hello.

        Raises:
            DaemonNotRunning: no daemon listens on the socket.
            VersionMismatch, ProtocolError: the daemon refused the Hello.
        """
        path = paths.socket
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        try:
            sock.connect(os.fspath(path))
        except (FileNotFoundError, ConnectionRefusedError) as exc:
            sock.close()
            raise DaemonNotRunning(f"no daemon is running for {paths.home} (socket {path})") from exc
        except OSError as exc:
            sock.close()
            raise DaemonNotRunning(f"cannot reach the daemon at {path}: {exc}") from exc
        try:
            return cls(sock, client)
        except BaseException:
            sock.close()
            raise

    def _hello(self, client: str) -> c.Welcome:
        self.send(c.Hello(c.PROTOCOL_VERSION, client, os.getpid()))
        reply = self._read()
        if isinstance(reply, c.ErrorReply):
            error = VersionMismatch if reply.code == "version_mismatch" else ProtocolError
            raise error(reply.message)
        if not isinstance(reply, c.Welcome):
            raise ProtocolError(f"expected Welcome, got {type(reply).__name__}")
        return reply

    def next_id(self) -> str:
        """A fresh request id."""
        return str(next(self._ids))

    def settimeout(self, timeout: float | None) -> None:
        """How long a read may wait (None: forever); a read past it raises ``TimeoutError``."""
        self._sock.settimeout(timeout)

    def fileno(self) -> int:
        """The socket's descriptor (to wait on it with ``select``)."""
        return self._sock.fileno()

    def send(self, message: Any) -> None:
        """Send one message.

        Raises:
            DaemonNotRunning: the daemon went away.
        """
        try:
            self._sock.sendall(self._to_daemon.encode(message))
        except OSError as exc:
            raise DaemonNotRunning(f"the daemon closed the connection: {exc}") from exc

    def request(self, message: Any) -> Any:
        """Send a request and return its reply; events arriving first are kept.

        Raises:
            RequestFailed: the daemon answered with an error.
            DaemonNotRunning: the connection closed first.
        """
        self.send(message)
        return self.reply_to(message.request_id)

    def reply_to(self, request_id: str) -> Any:
        """The next reply to ``request_id`` (raising its ErrorReply as RequestFailed)."""
        while True:
            received = self._read()
            if getattr(received, "request_id", None) == request_id:
                if isinstance(received, c.ErrorReply):
                    raise RequestFailed(received.code, received.message)
                return received
            if isinstance(received, c.ErrorReply) and received.request_id is None:
                raise RequestFailed(received.code, received.message)
            self._unclaimed.append(received)

    def receive(self) -> Any:
        """The next message not claimed by a request (a session event, mostly)."""
        if self._unclaimed:
            return self._unclaimed.popleft()
        return self._read()

    def has_buffered(self) -> bool:
        """True when :meth:`receive` can answer without reading the socket."""
        return bool(self._unclaimed) or bool(self._pending)

    def _read(self) -> Any:
        while not self._pending:
            try:
                data = self._sock.recv(_READ_SIZE)
            except TimeoutError:
                raise  # the caller's read deadline, not a broken connection
            except OSError as exc:
                raise DaemonNotRunning(f"the connection to the daemon broke: {exc}") from exc
            if not data:
                raise DaemonNotRunning("the daemon closed the connection")
            self._frames.feed(data)
            try:
                self._pending.extend(self._frames.frames())
            except MessageDecodeError as exc:
                raise ProtocolError(f"the daemon sent a bad frame: {exc}") from exc
        frame = self._pending.popleft()
        try:
            return self._from_daemon.decode(frame)
        except MessageDecodeError as exc:
            raise ProtocolError(f"the daemon sent a bad frame: {exc}") from exc

    def close(self) -> None:
        """Close the connection."""
        self._sock.close()

    def __enter__(self) -> ControlClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

