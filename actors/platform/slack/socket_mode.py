"""Slack's Socket Mode: the WebSocket that brings an app its events without a public URL.

One :meth:`SocketMode.serve` is one connection to the address ``apps.connections.open`` gave. Slack says
``hello``, then sends envelopes (``events_api``, ``interactive``, ``slash_commands``), each to be
acknowledged with its ``envelope_id`` within three seconds, or Slack sends it again (with the same event,
a higher ``retry_attempt``): envelopes are acknowledged before they are handled, and an event already
seen is not handled twice. ``serve`` returns when the connection should be made again at once: Slack
sent ``disconnect`` (it refreshes connections every few hours, and before it restarts a server), or the
socket dropped after ``hello`` (the envelopes unacknowledged meanwhile come again on the next one). It
raises :class:`SocketLost` when the socket never became ready (to be retried after a pause). A WebSocket
ping that gets no pong in time ends a connection that died without a close (a half-open socket).
A frame that is not JSON or not an envelope is logged and skipped; the connection goes on.
"""

from __future__ import annotations

import json
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any

import trio
from trio_websocket import (
    ConnectionClosed,
    HandshakeError,
    WebSocketConnection,
    open_websocket_url,
)

from actors.platform.gateway.websocket import keep_pinging, read_beside

__all__ = ["PING_EVERY", "PONG_WITHIN", "SocketLost", "SocketMode"]

log = logging.getLogger("hermes_actors.slack")

#: How often the connection is checked with a ping, and how long its pong may take.
PING_EVERY, PONG_WITHIN = 30.0, 10.0
#: Event and envelope ids remembered, to drop Slack's retries of what was handled.
SEEN_KEPT = 2048

#: Called with each envelope's type and payload, in order (the read loop waits for it).
Dispatch = Callable[[str, dict[str, Any]], Awaitable[None]]


class SocketLost(RuntimeError):
    """The connection could not be opened, or dropped before ``hello``."""


class SocketMode:
    """The app's Socket Mode connections, one after another.

    Args:
        dispatch: called with each new envelope's type and payload.
        on_hello: called when a connection is ready.
    """

    def __init__(self, dispatch: Dispatch, on_hello: Callable[[], None]) -> None:
        self.dispatch = dispatch
        self.on_hello = on_hello
        self.connections = self.disconnects = self.envelopes = self.duplicates = self.malformed = 0
        self._seen: OrderedDict[str, None] = OrderedDict()
        self._ready = False

    async def serve(self, url: str) -> None:
        """One connection, until it should be made again (see the module's docstring).

        Raises:
            SocketLost: it never became ready.
        """
        self._ready = False
        try:
            async with open_websocket_url(url, max_message_size=16 * 1024 * 1024) as socket:
                self.connections += 1
                await read_beside(socket, self._read, self._keep_alive)
        except ConnectionClosed as exc:
            code = exc.reason.code if exc.reason is not None else None
            if not self._ready:
                raise SocketLost(f"slack socket mode: closed before hello (code {code})") from None
            log.info("slack socket mode: the connection dropped (code %s); reconnecting", code)
        except (HandshakeError, OSError, trio.BrokenResourceError) as exc:
            if not self._ready:
                raise SocketLost(f"slack socket mode: could not connect ({type(exc).__name__})") from None
            log.info("slack socket mode: the connection failed (%s); reconnecting", type(exc).__name__)

    async def _read(self, socket: WebSocketConnection) -> None:
        while True:
            raw = await socket.get_message()
            try:
                frame = json.loads(raw)
            except ValueError:
                frame = None
            if not isinstance(frame, dict) or not isinstance(frame.get("type"), str):
                self.malformed += 1
                log.warning("slack socket mode: skipped a frame that is not an envelope (%d bytes)", len(raw))
                continue
            kind = frame["type"]
            if kind == "hello":
                self._ready = True
                self.on_hello()
            elif kind == "disconnect":
                self.disconnects += 1
                log.info("slack socket mode: Slack asked to reconnect (%s)", frame.get("reason", "no reason given"))
                await socket.aclose()
                return
            else:
                await self._envelope(socket, kind, frame)

    async def _envelope(self, socket: WebSocketConnection, kind: str, frame: dict[str, Any]) -> None:
        envelope_id, payload = frame.get("envelope_id"), frame.get("payload")
        if not isinstance(envelope_id, str) or not isinstance(payload, dict):
            self.malformed += 1
            log.warning("slack socket mode: skipped a %s envelope without an id or a payload", kind)
            return
        await socket.send_message(json.dumps({"envelope_id": envelope_id}))
        self.envelopes += 1
        event_id = payload.get("event_id")
        key = event_id if isinstance(event_id, str) else envelope_id
        if key in self._seen:
            self.duplicates += 1
            return
        self._seen[key] = None
        while len(self._seen) > SEEN_KEPT:
            self._seen.popitem(last=False)
        await self.dispatch(kind, payload)

    async def _keep_alive(self, socket: WebSocketConnection) -> None:
        """Ping now and then; no pong in time means a dead connection, closed for the read loop to see."""
        await keep_pinging(socket, PING_EVERY, PONG_WITHIN, "slack socket mode")
