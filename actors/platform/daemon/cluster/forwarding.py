"""The forwarding side of the peer link: requests for a session another daemon runs go to it.

``PeerRouter`` forwards over authenticated links to the address the owner registered with its lease
(``store.postgres.leases``), proving the shared secret (``handshake``) before its Hello: a relayed
attachment has a link of its own; requests reuse idle links, one request at a time on each. It remembers where each session it forwarded to runs, so the next
request goes there at once; an owner that gives a lease back says so on the database (``NOTIFY``), and
every daemon forgets it (``store.postgres.notices``). An owner remembered wrongly (one that died, or
moved the session on) costs one failed attempt, after which the request is served as if nothing were
remembered.
"""

from __future__ import annotations

import os
import select
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import attrs
import trio

from actors.platform.daemon.cluster.handshake import HANDSHAKE_SECONDS, PeerAuthFailed, prove
from control.errors import RequestFailed
from messages import control as c
from messages.codec import Codec, MessageDecodeError
from messages.framing import FrameReader

__all__ = ["REPLY_FRAME_LIMIT", "PeerLink", "PeerRouter", "PeerUnreachable"]

#: The frame limit of what a peer sends back (events can be large: a tool's output).
REPLY_FRAME_LIMIT = 256 * 1024 * 1024
#: Authenticated links kept open, idle, for the next requests to one peer.
IDLE_LINKS_PER_PEER = 8


class PeerUnreachable(RequestFailed):
    """The peer could not be reached, or refused the link: nothing was sent to it."""

    def __init__(self, message: str) -> None:
        super().__init__("unavailable", message)


@attrs.define
class PeerLink:
    """One open, authenticated link to a peer daemon, speaking the control protocol."""

    stream: trio.SocketStream
    reader: FrameReader
    encoder: Codec[c.ClientMessage]
    decoder: Codec[c.DaemonMessage]

    async def send(self, message: c.ClientMessage) -> None:
        """Send a request."""
        await self.stream.send_all(self.encoder.encode(message))

    async def receive(self) -> c.DaemonMessage:
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

    async def reply_to(self, request_id: str) -> c.DaemonMessage:
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
        self._encoder: Codec[c.ClientMessage] = Codec(c.ClientMessage, max_frame_bytes=max_frame_bytes)
        self._decoder: Codec[c.DaemonMessage] = Codec(c.DaemonMessage, max_frame_bytes=REPLY_FRAME_LIMIT)
        self.forwarded = 0
        # Where sessions this daemon forwarded to run: a hint, dropped when wrong or told it moved.
        self._owners: dict[str, str] = {}
        # Authenticated links no request is using, by peer address.
        self._idle: dict[str, list[PeerLink]] = {}

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
        """A new authenticated link to the daemon at ``address``, said hello to, closed at the end.

        Raises:
            PeerUnreachable: it cannot be reached, or refuses the link.
        """
        link = await self._open(address)
        async with link.stream:
            yield link

    async def _open(self, address: str) -> PeerLink:
        host, _, port = address.rpartition(":")
        try:
            with trio.fail_after(HANDSHAKE_SECONDS):
                stream = await trio.open_tcp_stream(host, int(port))
        except (OSError, trio.TooSlowError) as exc:
            raise PeerUnreachable(f"the daemon running the session ({address}) cannot be reached: {exc}") from exc
        link = PeerLink(stream, FrameReader(stream, REPLY_FRAME_LIMIT), self._encoder, self._decoder)
        try:
            with trio.fail_after(HANDSHAKE_SECONDS):
                await prove(stream, self._secret)
                await link.send(c.Hello(c.PROTOCOL_VERSION, "hermes-actors peer", os.getpid()))
                welcome = await link.receive()
        except (PeerAuthFailed, RequestFailed, trio.TooSlowError, trio.BrokenResourceError, OSError) as exc:
            await stream.aclose()
            # A listener that finds the proof wrong just closes the link: that is a refusal too.
            raise PeerUnreachable(f"the daemon running the session ({address}) refused the link: {exc}") from exc
        if not isinstance(welcome, c.Welcome):
            await stream.aclose()
            raise PeerUnreachable(f"the daemon running the session ({address}) did not welcome us: {welcome!r}")
        return link

    async def forward(self, address: str, request: c.ClientRequest) -> c.DaemonMessage:
        """Send ``request`` to the daemon at ``address``; its reply (an error reply included), as is.

        The link comes from the idle ones kept for ``address`` when one is, and goes back there after
        (up to ``IDLE_LINKS_PER_PEER``), so a forwarded request costs no handshake.

        Raises:
            PeerUnreachable: nothing was sent (the peer cannot be reached, or refused the link).
            RequestFailed: the peer went away after the request was sent.
        """
        link = self._idle_link(address)
        if link is None:
            link = await self._open(address)
        kept = False
        try:
            try:
                await link.send(request)
            except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
                raise PeerUnreachable(f"the daemon running the session ({address}) closed the link: {exc}") from exc
            reply = await link.reply_to(request.request_id)
            idle = self._idle.setdefault(address, [])
            if len(idle) < IDLE_LINKS_PER_PEER:
                idle.append(link)
                kept = True
        finally:
            if not kept:
                link.stream.socket.close()
        self.forwarded += 1
        return reply

    def _idle_link(self, address: str) -> PeerLink | None:
        """An idle link to ``address`` the peer has not closed meanwhile (those are dropped), or None."""
        idle = self._idle.get(address, [])
        while idle:
            link = idle.pop()
            if _open_at_peer(link.stream.socket):
                return link
            link.stream.socket.close()
        return None

    def close_idle(self) -> None:
        """Close every idle link (the daemon is stopping)."""
        for idle in self._idle.values():
            for link in idle:
                link.stream.socket.close()
        self._idle.clear()


def _open_at_peer(sock: trio.socket.SocketType) -> bool:
    """Whether the peer has neither closed the connection nor sent anything unasked on it (either makes
    an idle link unfit to carry a request): nothing is waiting to be read."""
    poller = select.poll()
    poller.register(sock.fileno(), select.POLLIN | select.POLLRDHUP)
    return not poller.poll(0)
