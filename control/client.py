"""A blocking control-socket client for the CLI: no Trio, no SDKs, fast to import.

::

    with ControlClient.connect(DaemonPaths(home)) as client:
        reply = client.request(Status(client.next_id()))       # a typed reply
        tree = client.request_raw(Tree(client.next_id()))      # its JSON dict

Requests are flat messages, written with :func:`encode_request` (the codec's
exact wire form, without building a cattrs converter). Replies are read as
JSON dicts; typed replies are decoded through the full codec, built the first
time one is asked for, so ``tree --json`` never pays for it. Replies are
matched to requests by ``request_id``; session events that arrive meanwhile
are kept, in order, for :meth:`ControlClient.receive`.
"""

from __future__ import annotations

import itertools
import json
import os
import socket
import threading
from collections import deque
from typing import Any

import attrs

from control.errors import DaemonNotRunning, InvalidText, ProtocolError, RequestFailed, VersionMismatch
from control.paths import DaemonPaths
from messages import control as c
from messages.sockets import peer_uid

__all__ = ["CLIENT_FRAME_LIMIT", "ControlClient", "encode_request"]

#: The daemon is trusted; its frames (a large tree) may be big.
CLIENT_FRAME_LIMIT = 256 * 1024 * 1024
_READ_SIZE = 256 * 1024


def encode_request(message: Any) -> bytes:
    """One frame for a client message: its flat fields plus the ``type`` tag.

    Client messages hold only strings, numbers, None and lists of strings, so
    this is byte-for-byte what ``Codec(ClientMessage).encode`` would decode.

    Raises:
        InvalidText: a string holds bytes that are not UTF-8 (a lone surrogate), which no frame can carry.
    """
    payload = attrs.asdict(message, recurse=False)
    payload["type"] = type(message).__name__
    try:
        return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
    except UnicodeEncodeError as exc:
        raise InvalidText(_invalid_text_message(payload)) from exc


def _invalid_text_message(payload: dict[str, Any]) -> str:
    """Which field of a request is not UTF-8, shown escaped (printing it raw could fail again)."""
    for name, value in payload.items():
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str) and not item.isascii():
                try:
                    item.encode("utf-8")
                except UnicodeEncodeError:
                    return f"the {name} {item!r} is not valid UTF-8, so it cannot be sent to the daemon"
    return "the request holds text that is not valid UTF-8, so it cannot be sent to the daemon"


class ControlClient:
    """One connection to the daemon, after a successful Hello.

    Args:
        sock: a connected Unix socket.
        client: how the client names itself in the daemon's tree.
    """

    def __init__(self, sock: socket.socket, client: str = "hermes-actors") -> None:
        self._sock = sock
        self._buffer = bytearray()
        self._unclaimed: deque[dict[str, Any]] = deque()
        self._ids = itertools.count(1)
        self._codec: Any = None
        # An attached UI sends from its input thread while the main thread reads.
        self._send_lock = threading.Lock()
        welcome = self._hello(client)
        self.welcome = c.Welcome(welcome["version"], welcome["daemon_pid"], welcome["connection"])

    @classmethod
    def connect(cls, paths: DaemonPaths, client: str = "hermes-actors", timeout: float | None = 10.0) -> ControlClient:
        """Connect and say hello.

        Raises:
            DaemonNotRunning: no daemon of ours listens on the socket.
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
        uid = peer_uid(sock)
        if uid is not None and uid != os.getuid():
            # Our daemon runs as us: this is another user's socket, planted where ours would be.
            sock.close()
            raise DaemonNotRunning(f"the socket {path} is served by uid {uid}, not by a daemon of ours")
        try:
            return cls(sock, client)
        except BaseException:
            sock.close()
            raise

    def _hello(self, client: str) -> dict[str, Any]:
        try:
            self.send(c.Hello(c.PROTOCOL_VERSION, client, os.getpid()))
        except DaemonNotRunning:
            # A daemon refusing the connection (too many clients) writes why and closes at once,
            # maybe before the Hello went out: its reason is still waiting to be read.
            pass
        reply = self._read()
        if reply.get("type") == "ErrorReply":
            error = VersionMismatch if reply.get("code") == "version_mismatch" else ProtocolError
            raise error(str(reply.get("message")))
        if reply.get("type") != "Welcome":
            raise ProtocolError(f"expected Welcome, got {reply.get('type')!r}")
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
        """Send one client message (safe from several threads).

        Raises:
            DaemonNotRunning: the daemon went away.
            InvalidText: a string of the message is not valid UTF-8.
        """
        frame = encode_request(message)
        try:
            with self._send_lock:
                self._sock.sendall(frame)
        except OSError as exc:
            raise DaemonNotRunning(f"the daemon closed the connection: {exc}") from exc

    def decode(self, payload: dict[str, Any]) -> Any:
        """The typed message of a JSON dict the daemon sent.

        Raises:
            ProtocolError: it is not a valid daemon message.
        """
        if self._codec is None:
            from messages.codec import Codec

            self._codec = Codec(c.DaemonMessage, max_frame_bytes=CLIENT_FRAME_LIMIT)
        from messages.codec import MessageDecodeError

        try:
            return self._codec.from_dict(payload)
        except MessageDecodeError as exc:
            raise ProtocolError(f"the daemon sent a bad message: {exc}") from exc

    def request_raw(self, message: Any) -> dict[str, Any]:
        """Send a request and return its reply as the JSON dict received.

        Raises:
            RequestFailed: the daemon answered with an error.
            DaemonNotRunning: the connection closed first.
        """
        self.send(message)
        return self.reply_to_raw(message.request_id)

    def request(self, message: Any) -> Any:
        """Send a request and return its typed reply (see :meth:`request_raw`)."""
        return self.decode(self.request_raw(message))

    def session_id_for(self, ref: str) -> str:
        """The id of the session ``ref`` names: an id, or a title (an id wins).

        Raises:
            RequestFailed: ``not_found``.
        """
        return str(self.request_raw(c.ShowSession(self.next_id(), ref, head=0, tail=0))["session"]["id"])

    def reply_to_raw(self, request_id: str) -> dict[str, Any]:
        """The next reply to ``request_id`` as a dict (raising its ErrorReply as RequestFailed)."""
        while True:
            received = self._read()
            is_error = received.get("type") == "ErrorReply"
            if received.get("request_id") == request_id or (is_error and received.get("request_id") is None):
                if is_error:
                    raise RequestFailed(str(received.get("code")), str(received.get("message")))
                return received
            self._unclaimed.append(received)

    def reply_to(self, request_id: str) -> Any:
        """The next typed reply to ``request_id``."""
        return self.decode(self.reply_to_raw(request_id))

    def receive(self) -> Any:
        """The next typed message not claimed by a request (a session event, mostly)."""
        return self.decode(self.receive_raw())

    def receive_raw(self) -> dict[str, Any]:
        """The next message not claimed by a request, as the JSON dict received."""
        return self._unclaimed.popleft() if self._unclaimed else self._read()

    def has_buffered(self) -> bool:
        """True when :meth:`receive` can answer without reading the socket."""
        return bool(self._unclaimed) or b"\n" in self._buffer

    def _read(self) -> dict[str, Any]:
        while True:
            end = self._buffer.find(b"\n")
            if end >= 0:
                break
            if len(self._buffer) > CLIENT_FRAME_LIMIT:
                raise ProtocolError(f"the daemon sent a frame over {CLIENT_FRAME_LIMIT} bytes")
            try:
                data = self._sock.recv(_READ_SIZE)
            except TimeoutError:
                raise  # the caller's read deadline, not a broken connection
            except OSError as exc:
                raise DaemonNotRunning(f"the connection to the daemon broke: {exc}") from exc
            if not data:
                raise DaemonNotRunning("the daemon closed the connection")
            self._buffer += data
        frame = bytes(self._buffer[:end])
        del self._buffer[: end + 1]
        try:
            payload = json.loads(frame)
        except ValueError as exc:
            raise ProtocolError(f"the daemon sent a frame that is not JSON: {exc}") from exc
        if not isinstance(payload, dict):
            raise ProtocolError("the daemon sent a frame that is not a JSON object")
        return payload

    def close(self) -> None:
        """Close the connection."""
        self._sock.close()

    def __enter__(self) -> ControlClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
