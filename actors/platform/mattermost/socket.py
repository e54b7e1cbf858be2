"""Mattermost's WebSocket events API (``/api/v4/websocket``): one connection after another, each
authenticated, its events handed on in order, a dropped one resumed where it stopped.

On connecting the bot sends ``authentication_challenge`` with its token (in the frame, never in the
address), and the server answers ``{"status": "OK", "seq_reply": 1}`` and a ``hello`` event naming the
``connection_id``. Each event carries ``seq``, counting up from 0 on a connection. A connection that
drops is opened again with ``connection_id`` and ``sequence_number`` (the next ``seq`` expected), and the
server sends the events missed meanwhile, if it still has them, on the same connection id; if not, it
says ``hello`` with a new id and the missed events are lost (a gap is logged). The caller drops events
it has seen (a post's id), so an event sent twice is handled once.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlencode

import trio
from trio_websocket import ConnectionClosed, HandshakeError, WebSocketConnection, open_websocket_url

from actors.platform.gateway.websocket import keep_pinging, read_beside
from messages.wire_shapes import wire_object, wire_text

__all__ = ["PING_EVERY", "PONG_WITHIN", "EventSocket", "SocketLost", "websocket_url"]

log = logging.getLogger("hermes_actors.mattermost")

#: How often the connection is checked with a ping, and how long its pong may take.
PING_EVERY, PONG_WITHIN = 30.0, 10.0

#: Called with each event's name and data, in order (the read loop waits for it).
Dispatch = Callable[[str, dict[str, Any]], Awaitable[None]]


class SocketLost(RuntimeError):
    """The connection could not be opened or authenticated, or dropped before ``hello``."""


def websocket_url(server: str) -> str:
    """The events API's address for a server's (``https://x`` -> ``wss://x/api/v4/websocket``)."""
    base = server.rstrip("/")
    for plain, secure in (("http://", "ws://"), ("https://", "wss://")):
        if base.startswith(plain):
            base = secure + base.removeprefix(plain)
    return f"{base}/api/v4/websocket"


class EventSocket:
    """The bot's event connections, one after another.

    Args:
        url: the events API's address (see :func:`websocket_url`).
        token: the bot's access token (sent in the authentication frame only).
        dispatch: called with each event's name and data.
        on_hello: called when a connection is ready.
    """

    def __init__(self, url: str, token: str, dispatch: Dispatch, on_hello: Callable[[], None]) -> None:
        self.url = url
        self._token = token
        self.dispatch = dispatch
        self.on_hello = on_hello
        self.connection_id = ""
        self.next_seq = 0
        self.connections = self.resumed = self.gaps = self.events = self.malformed = 0
        self._ready = False

    async def serve(self) -> None:
        """One connection, until it drops (see the module's docstring).

        Raises:
            SocketLost: it never became ready.
        """
        self._ready = False
        url = self.url
        if self.connection_id:
            url += "?" + urlencode({"connection_id": self.connection_id, "sequence_number": self.next_seq})
        try:
            async with open_websocket_url(url, max_message_size=16 * 1024 * 1024) as socket:
                self.connections += 1
                await socket.send_message(json.dumps({"seq": 1, "action": "authentication_challenge", "data": {"token": self._token}}))
                await read_beside(socket, self._read, self._keep_alive)
        except ConnectionClosed as exc:
            code = exc.reason.code if exc.reason is not None else None
            if not self._ready:
                raise SocketLost(f"closed before hello (code {code})") from None
            log.info("mattermost websocket: the connection dropped (code %s); resuming", code)
        except (HandshakeError, OSError, trio.BrokenResourceError) as exc:
            if not self._ready:
                raise SocketLost(f"could not connect ({type(exc).__name__})") from None
            log.info("mattermost websocket: the connection failed (%s); resuming", type(exc).__name__)

    async def _read(self, socket: WebSocketConnection) -> None:
        while True:
            raw = await socket.get_message()
            try:
                frame = json.loads(raw)
            except ValueError:
                frame = None
            if isinstance(frame, dict) and "seq_reply" in frame:
                if frame.get("status") != "OK":
                    log.warning("mattermost websocket: the server refused the authentication (%s)", str(frame.get("error"))[:200])
                continue
            if not isinstance(frame, dict) or not isinstance(frame.get("event"), str) or not isinstance(frame.get("seq"), int):
                self.malformed += 1
                log.warning("mattermost websocket: skipped a frame that is not an event (%d bytes)", len(raw))
                continue
            data = wire_object(frame.get("data"))
            if frame["event"] == "hello":
                self._hello(data)
                continue
            if frame["seq"] != self.next_seq:
                self.gaps += 1
                log.warning("mattermost websocket: event %d came where %d was expected; events between may be lost", frame["seq"], self.next_seq)
            self.next_seq = frame["seq"] + 1
            self.events += 1
            await self.dispatch(frame["event"], data)

    def _hello(self, data: dict[str, Any]) -> None:
        connection_id = wire_text(data.get("connection_id"))
        if connection_id and connection_id == self.connection_id:
            self.resumed += 1
            log.info("mattermost websocket: resumed connection %s from event %d", connection_id, self.next_seq)
        else:
            if self.connection_id:
                log.info("mattermost websocket: could not resume; a new connection (events missed meanwhile are lost)")
            self.connection_id, self.next_seq = connection_id, 1  # hello is the new connection's event 0
        self._ready = True
        self.on_hello()

    async def _keep_alive(self, socket: WebSocketConnection) -> None:
        await keep_pinging(socket, PING_EVERY, PONG_WITHIN, "mattermost websocket")
