"""Discord's Gateway: the websocket that brings a bot its events, kept alive and resumed.

One :meth:`DiscordGateway.serve` is one connection: it says hello, identifies (or resumes the session
it had, so that the events sent while it was away are replayed rather than lost), heartbeats at the
interval Discord asks for, and hands every dispatch (``op 0``) to the bot in order. It returns when the
connection should be made again: Discord asked (``op 7``), the session was invalidated (``op 9``: resumed
when Discord says it may be, identified anew otherwise), a heartbeat went unacknowledged (a zombie
connection), or the socket dropped. A refused token is :class:`GatewayRefused`: reconnecting will not help.
"""

from __future__ import annotations

import functools
import json
import logging
import random
from collections.abc import Awaitable, Callable
from typing import Any

import trio
from trio_websocket import (
    ConnectionClosed,
    HandshakeError,
    WebSocketConnection,
    open_websocket_url,
)

from actors.platform.gateway.websocket import read_beside

__all__ = ["INTENTS", "DiscordGateway", "GatewayLost", "GatewayRefused"]

log = logging.getLogger("hermes_actors.discord")

#: Guilds, guild messages, direct messages and message content (a privileged intent, switched on in
#: the Developer Portal): what a bot that answers messages needs.
INTENTS = (1 << 0) | (1 << 9) | (1 << 12) | (1 << 15)
#: Close codes after which identifying again is pointless (a bad token, bad intents, a bad shard).
FATAL_CLOSE_CODES = frozenset({4004, 4010, 4011, 4012, 4013, 4014})
#: Close codes after which the session cannot be resumed (identify anew).
FRESH_SESSION_CODES = frozenset({4007, 4009})


class GatewayRefused(RuntimeError):
    """Discord closed the Gateway with a code that reconnecting will not cure (a refused token)."""


class GatewayLost(RuntimeError):
    """The connection ended; connect again (resuming when the session allows)."""


class DiscordGateway:
    """The Gateway's session across connections.

    Args:
        token: the bot's token.
        dispatch: called with each event's name and data, in order (the read loop waits for it).
        intents: the Gateway intents to identify with.
    """

    def __init__(self, token: str, dispatch: Callable[[str, dict[str, Any]], Awaitable[None]], intents: int = INTENTS) -> None:
        self._token = token
        self.dispatch = dispatch
        self.intents = intents
        self.session_id: str | None = None
        self.resume_url: str | None = None
        self.seq: int | None = None
        self.connections = self.resumes = 0
        self._acked = True

    def forget_session(self) -> None:
        """Identify anew next time (the session cannot be resumed)."""
        self.session_id = self.resume_url = None
        self.seq = None

    async def serve(self, url: str) -> None:
        """One connection, until it should be made again (see the module's docstring).

        ``url`` is the Gateway's address (``GET /gateway/bot``); a resumable session goes to the
        ``resume_gateway_url`` Discord gave it instead.

        Raises:
            GatewayRefused: a fatal close code. GatewayLost: the socket dropped or could not open.
        """
        target = (self.resume_url if self.session_id else None) or url
        try:
            async with open_websocket_url(f"{target.rstrip('/')}/?v=10&encoding=json", max_message_size=16 * 1024 * 1024) as socket:
                self.connections += 1
                await self._converse(socket)
        except ConnectionClosed as exc:
            self._closed(exc.reason.code if exc.reason is not None else None)
        except (HandshakeError, OSError, trio.BrokenResourceError) as exc:
            raise GatewayLost(f"discord gateway: could not connect ({type(exc).__name__})") from None

    def _closed(self, code: int | None) -> None:
        if code in FATAL_CLOSE_CODES:
            raise GatewayRefused(f"discord gateway closed with code {code} (the token or intents were refused)")
        if code in FRESH_SESSION_CODES:
            self.forget_session()
        raise GatewayLost(f"discord gateway: the connection closed (code {code})")

    async def _converse(self, socket: WebSocketConnection) -> None:
        hello = json.loads(await socket.get_message())
        if hello.get("op") != 10:
            raise GatewayLost("discord gateway: no hello")
        interval = float(hello["d"]["heartbeat_interval"]) / 1000
        if self.session_id is not None and self.seq is not None:
            self.resumes += 1
            await _send(socket, 6, {"token": self._token, "session_id": self.session_id, "seq": self.seq})
        else:
            properties = {"os": "linux", "browser": "hermes-actors", "device": "hermes-actors"}
            await _send(socket, 2, {"token": self._token, "intents": self.intents, "properties": properties})
        self._acked = True
        await read_beside(socket, self._read, functools.partial(self._heartbeat, interval=interval))

    async def _read(self, socket: WebSocketConnection) -> None:
        while True:
            frame = json.loads(await socket.get_message())
            op = frame.get("op")
            if frame.get("s") is not None:
                self.seq = frame["s"]
            if op == 0:
                name, data = str(frame.get("t")), frame.get("d") or {}
                if name == "READY":
                    self.session_id, self.resume_url = data.get("session_id"), data.get("resume_gateway_url")
                await self.dispatch(name, data)
            elif op == 1:
                await _send(socket, 1, self.seq)
            elif op == 11:
                self._acked = True
            elif op == 7:
                log.info("discord gateway: asked to reconnect")
                await socket.aclose(4000, "reconnecting")
                return
            elif op == 9:
                if not frame.get("d"):
                    self.forget_session()
                log.info("discord gateway: session invalidated (%s)", "resumable" if frame.get("d") else "identify anew")
                # Discord asks for a pause of 1 to 5 s before identifying again.
                await trio.sleep(random.uniform(1, 5))
                await socket.aclose(4000, "invalid session")
                return

    async def _heartbeat(self, socket: WebSocketConnection, interval: float) -> None:
        await trio.sleep(interval * random.random())
        while True:
            if not self._acked:
                log.warning("discord gateway: a heartbeat went unanswered; reconnecting")
                await socket.aclose(4000, "zombie connection")
                return
            self._acked = False
            try:
                await _send(socket, 1, self.seq)
            except ConnectionClosed:
                return  # the read loop hears of it too
            await trio.sleep(interval)


async def _send(socket: WebSocketConnection, op: int, data: Any) -> None:
    await socket.send_message(json.dumps({"op": op, "d": data}))
