"""The peer link between daemons sharing a PostgreSQL store: requests for a session another daemon runs
are forwarded to it, and its events relayed back (issue 19).

A daemon with ``daemon.cluster_listen`` accepts peers on TCP (the ``cluster`` actor). A peer proves it
knows the shared secret (``HERMES_ACTORS_CLUSTER_SECRET``) before anything else: the listener sends a
random nonce, the peer answers with its HMAC-SHA256 under the secret; a wrong or late answer closes the
connection (and is logged). After that the link speaks the control protocol, served by the same
``Connection`` actor as a local client, except that a request arriving from a peer is never forwarded
again (a stale registry could otherwise bounce it between daemons).

The forwarding side (``PeerRouter``) opens a connection per forwarded request, and one per relayed
attachment, to the address the owner registered with its lease (``store.postgres.leases``).
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any

import attrs
import trio

from actors import Actor, ActorBase, ActorFailed
from actors.platform.daemon.control_connection import Connection
from actors.platform.daemon.control_service import ControlService
from actors.platform.errors import RequestFailed
from config.daemon import DaemonConfig
from messages import control as c
from messages.codec import Codec, MessageDecodeError
from messages.framing import FrameReader
from messages.supervision import ActorState

__all__ = ["PEER_SECRET_ENV", "PeerAuthFailed", "PeerListener", "PeerRouter", "peer_secret"]

log = logging.getLogger("hermes_actors.cluster")

PEER_SECRET_ENV = "HERMES_ACTORS_CLUSTER_SECRET"
MIN_SECRET_CHARS = 32
# Seconds a peer has to prove itself, and a forwarder to reach a peer.
_HANDSHAKE_SECONDS = 5.0
_NONCE_BYTES = 32
# A nonce (token_hex of 32 bytes) and a proof (a SHA-256 hexdigest) are both 64 characters.
_LINE_BYTES = 2 * _NONCE_BYTES + 1
_CONTEXT = b"hermes-actors peer link v1:"
_ACCEPT_RETRY_SECONDS = 0.1
# The frame limit of what a peer sends back (events can be large: a tool's output).
_REPLY_FRAME_LIMIT = 256 * 1024 * 1024


class PeerAuthFailed(Exception):
    """The other side of a peer link did not prove it knows the shared secret."""


def peer_secret(environ: Mapping[str, str]) -> bytes:
    """The shared secret of the peer link, from the environment (or ``.env``).

    Raises:
        ValueError: it is unset or shorter than 32 characters (a daemon must not listen without it).
    """
    secret = environ.get(PEER_SECRET_ENV, "")
    if len(secret) < MIN_SECRET_CHARS:
        raise ValueError(
            f"daemon.cluster_listen needs {PEER_SECRET_ENV} (at least {MIN_SECRET_CHARS} characters, the same on "
            "every daemon) in the environment or .env"
        )
    return secret.encode()


def _proof(secret: bytes, nonce: bytes) -> bytes:
    return hmac.new(secret, _CONTEXT + nonce, hashlib.sha256).hexdigest().encode()


async def _read_line(stream: trio.abc.ReceiveStream) -> bytes:
    """One handshake line (a nonce or a proof: always 64 hex digits and a newline), without its
    newline. Exactly that much is read: what follows is the control protocol's."""
    data = b""
    while len(data) < _LINE_BYTES:
        chunk = await stream.receive_some(_LINE_BYTES - len(data))
        if not chunk:
            raise PeerAuthFailed("the connection closed during the handshake")
        data += chunk
    if not data.endswith(b"\n"):
        raise PeerAuthFailed("a malformed handshake line")
    return data[:-1]


async def challenge(stream: trio.SocketStream, secret: bytes) -> None:
    """The listener's side: send a nonce, check the peer's proof.

    Raises:
        PeerAuthFailed: a wrong proof, or none within the handshake's time.
    """
    nonce = secrets.token_hex(_NONCE_BYTES).encode()
    with trio.move_on_after(_HANDSHAKE_SECONDS) as waited:
        await stream.send_all(nonce + b"\n")
        answer = await _read_line(stream)
    if waited.cancelled_caught:
        raise PeerAuthFailed(f"no proof within {_HANDSHAKE_SECONDS:g} s")
    if not hmac.compare_digest(answer, _proof(secret, nonce)):
        raise PeerAuthFailed("a wrong proof of the shared secret")


async def prove(stream: trio.SocketStream, secret: bytes) -> None:
    """The connecting side: answer the listener's nonce."""
    nonce = await _read_line(stream)
    await stream.send_all(_proof(secret, nonce) + b"\n")


class PeerListener(Actor[None]):
    """Accepts peer daemons at ``daemon.cluster_listen`` (path ``cluster``; each peer ``cluster/peer:<n>``).

    Args:
        service: serves the peers' requests (as a local client's).
        config: the ``daemon`` section.
        secret: the shared secret.
        advertise: told the address peers reach this daemon at, once it listens.
    """

    kind = "cluster"

    def __init__(
        self, service: ControlService, config: DaemonConfig, secret: bytes,
        advertise: Callable[[str], Awaitable[None]],
    ) -> None:
        super().__init__()
        self._service = service
        self._config = config
        self._secret = secret
        self._advertise = advertise
        self._client_codec: Codec[Any] = Codec(c.ClientMessage, max_frame_bytes=config.max_frame_bytes)
        self._daemon_codec: Codec[Any] = Codec(c.DaemonMessage, max_frame_bytes=_REPLY_FRAME_LIMIT)
        self._listeners: list[trio.SocketListener] = []
        self.address = ""
        self._accepted = 0
        self._refused = 0

    def snapshot_details(self) -> dict[str, Any]:
        return {"address": self.address, "peers_accepted": self._accepted, "peers_refused": self._refused}

    async def on_start(self) -> None:
        assert self._config.cluster_listen is not None
        host, _, port = self._config.cluster_listen.rpartition(":")
        self._listeners = await trio.open_tcp_listeners(int(port), host=host)
        bound = self._listeners[0].socket.getsockname()
        self.address = f"{host}:{bound[1]}"
        await self._advertise(self.address)
        log.info("peer link listening on %s", self.address)

    async def on_stop(self) -> None:
        for listener in self._listeners:
            await listener.aclose()

    async def main(self) -> None:
        self.state = ActorState.RUNNING
        async with trio.open_nursery() as nursery:
            for listener in self._listeners:
                nursery.start_soon(self._accept, listener, nursery)

    async def _accept(self, listener: trio.SocketListener, nursery: trio.Nursery) -> None:
        # Not trio.serve_listeners: it closes a stream when its handler returns, and a peer's
        # connection outlives the handshake (it is its Connection actor's).
        while True:
            try:
                stream = await listener.accept()
            except OSError as exc:
                log.warning("accepting a peer failed: %s", exc)
                await trio.sleep(_ACCEPT_RETRY_SECONDS)
                continue
            # The handshake in a task of its own: a peer slow to prove itself holds up nobody else.
            nursery.start_soon(self._admit, stream)

    async def _admit(self, stream: trio.SocketStream) -> None:
        try:
            await challenge(stream, self._secret)
        except (PeerAuthFailed, trio.BrokenResourceError, OSError) as exc:
            self._refused += 1
            log.warning("refused a peer from %s: %s", _peer_name(stream), exc)
            await stream.aclose()
            return
        self._accepted += 1
        connection = Connection(
            stream, self._service, self._client_codec, self._daemon_codec, self._config.subscriber_buffer,
            lambda: len(self.children()), self._config.frame_timeout_seconds, forwards=False,
        )
        await self.spawn(connection, f"peer:{self._accepted}", on_failure=self._peer_failed)

    def _peer_failed(self, peer: ActorBase, failure: ActorFailed) -> None:
        log.warning("peer connection %s failed: %s", peer.path, failure)


def _peer_name(stream: trio.SocketStream) -> str:
    try:
        host, port = stream.socket.getpeername()[:2]
    except OSError:
        return "an unknown address"
    return f"{host}:{port}"


@attrs.define
class PeerLink:
    """One open, authenticated link to a peer daemon, speaking the control protocol."""

    stream: trio.SocketStream
    reader: FrameReader
    encoder: Codec[Any]
    decoder: Codec[Any]

    async def send(self, message: Any) -> None:
        """Send a request."""
        await self.stream.send_all(self.encoder.encode(message))

    async def receive(self) -> Any:
        """The next message from the peer.

        Raises:
            RequestFailed: the peer closed the link, or sent what cannot be decoded.
        """
        frame = await self.reader.receive_frame()
        if frame is None:
            raise RequestFailed("unavailable", "the daemon running the session closed the link")
        try:
            return self.decoder.decode(frame)
        except MessageDecodeError as exc:
            raise RequestFailed("unavailable", f"the daemon running the session sent a bad frame: {exc}") from exc

    async def reply_to(self, request_id: str) -> Any:
        """The peer's reply to ``request_id`` (events before it are skipped)."""
        while True:
            message = await self.receive()
            if getattr(message, "request_id", None) == request_id:
                return message
            if isinstance(message, c.ErrorReply) and message.request_id is None:
                raise RequestFailed(message.code, f"the daemon running the session: {message.message}")


class PeerRouter:
    """Forwards requests to the daemon that runs their session.

    Args:
        secret: the shared secret.
        max_frame_bytes: the largest frame a request may be (the local clients' limit).
    """

    def __init__(self, secret: bytes, max_frame_bytes: int) -> None:
        self._secret = secret
        self._encoder: Codec[Any] = Codec(c.ClientMessage, max_frame_bytes=max_frame_bytes)
        self._decoder: Codec[Any] = Codec(c.DaemonMessage, max_frame_bytes=_REPLY_FRAME_LIMIT)
        self.forwarded = 0

    @asynccontextmanager
    async def link(self, address: str) -> AsyncIterator[PeerLink]:
        """An authenticated link to the daemon at ``address``, said hello to.

        Raises:
            RequestFailed: ``unavailable`` when it cannot be reached or refuses the link.
        """
        host, _, port = address.rpartition(":")
        try:
            with trio.fail_after(_HANDSHAKE_SECONDS):
                stream = await trio.open_tcp_stream(host, int(port))
        except (OSError, trio.TooSlowError) as exc:
            raise RequestFailed("unavailable", f"the daemon running the session ({address}) cannot be reached: {exc}") from exc
        async with stream:
            link = PeerLink(stream, FrameReader(stream, _REPLY_FRAME_LIMIT), self._encoder, self._decoder)
            try:
                with trio.fail_after(_HANDSHAKE_SECONDS):
                    await prove(stream, self._secret)
                    await link.send(c.Hello(c.PROTOCOL_VERSION, "hermes-actors peer", os.getpid()))
                    welcome = await link.receive()
            except (PeerAuthFailed, RequestFailed, trio.TooSlowError, trio.BrokenResourceError, OSError) as exc:
                # A listener that finds the proof wrong just closes the link: that is a refusal too.
                raise RequestFailed("unavailable", f"the daemon running the session ({address}) refused the link: {exc}") from exc
            if not isinstance(welcome, c.Welcome):
                raise RequestFailed("unavailable", f"the daemon running the session ({address}) did not welcome us: {welcome!r}")
            yield link

    async def forward(self, address: str, request: Any) -> Any:
        """Send ``request`` to the daemon at ``address``; its reply (an error reply included), as is."""
        async with self.link(address) as link:
            await link.send(request)
            reply = await link.reply_to(request.request_id)
        self.forwarded += 1
        return reply
