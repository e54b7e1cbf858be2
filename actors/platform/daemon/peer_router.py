"""The forwarding side of the peer link: requests for a session another daemon runs go to it.

``PeerRouter`` opens a connection per forwarded request, and one per relayed attachment, to the
address the owner registered with its lease (``store.postgres.leases``), and proves the shared secret
(``peer_auth``) before its Hello. It remembers where each session it forwarded to runs, so the next
request goes there at once; an owner that gives a lease back says so on the database (``NOTIFY``), and
every daemon forgets it (``store.postgres.notices``). An owner remembered wrongly (one that died, or
moved the session on) costs one failed attempt, after which the request is served as if nothing were
remembered.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import attrs
import trio

from actors.platform.daemon.peer_auth import HANDSHAKE_SECONDS, PeerAuthFailed, prove
from actors.platform.errors import RequestFailed
from messages import control as c
from messages.codec import Codec, MessageDecodeError
from messages.framing import FrameReader

__all__ = ["REPLY_FRAME_LIMIT", "PeerLink", "PeerRouter", "PeerUnreachable"]

#: The frame limit of what a peer sends back (events can be large: a tool's output).
REPLY_FRAME_LIMIT = 256 * 1024 * 1024


class PeerUnreachable(RequestFailed):
    """The peer could not be reached, or refused the link: nothing was sent to it."""

    def __init__(self, message: str) -> None:
        super().__init__("unavailable", message)


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
        self._decoder: Codec[Any] = Codec(c.DaemonMessage, max_frame_bytes=REPLY_FRAME_LIMIT)
        self.forwarded = 0
        # Where sessions this daemon forwarded to run: a hint, dropped when wrong or told it moved.
        self._owners: dict[str, str] = {}

    def owner(self, session_id: str) -> str | None:
        """Where the session ran when last forwarded to, if known."""
        return self._owners.get(session_id)

    def remember(self, session_id: str, address: str) -> None:
        """The session runs at ``address``."""
        self._owners[session_id] = address

    def remembered(self) -> int:
        """How many sessions' owners are remembered."""
        return len(self._owners)

    def forget(self, session_id: str) -> None:
        """The session's owner gave its lease back, or was not where it was remembered."""
        self._owners.pop(session_id, None)

    @asynccontextmanager
    async def link(self, address: str) -> AsyncIterator[PeerLink]:
        """An authenticated link to the daemon at ``address``, said hello to.

        Raises:
            RequestFailed: ``unavailable`` when it cannot be reached or refuses the link.
        """
        host, _, port = address.rpartition(":")
        try:
            with trio.fail_after(HANDSHAKE_SECONDS):
                stream = await trio.open_tcp_stream(host, int(port))
        except (OSError, trio.TooSlowError) as exc:
            raise PeerUnreachable(f"the daemon running the session ({address}) cannot be reached: {exc}") from exc
        async with stream:
            link = PeerLink(stream, FrameReader(stream, REPLY_FRAME_LIMIT), self._encoder, self._decoder)
            try:
                with trio.fail_after(HANDSHAKE_SECONDS):
                    await prove(stream, self._secret)
                    await link.send(c.Hello(c.PROTOCOL_VERSION, "hermes-actors peer", os.getpid()))
                    welcome = await link.receive()
            except (PeerAuthFailed, RequestFailed, trio.TooSlowError, trio.BrokenResourceError, OSError) as exc:
                # A listener that finds the proof wrong just closes the link: that is a refusal too.
                raise PeerUnreachable(f"the daemon running the session ({address}) refused the link: {exc}") from exc
            if not isinstance(welcome, c.Welcome):
                raise PeerUnreachable(f"the daemon running the session ({address}) did not welcome us: {welcome!r}")
            yield link

    async def forward(self, address: str, request: Any) -> Any:
        """Send ``request`` to the daemon at ``address``; its reply (an error reply included), as is."""
        async with self.link(address) as link:
            await link.send(request)
            reply = await link.reply_to(request.request_id)
        self.forwarded += 1
        return reply
