"""A platform's WebSocket read beside a task that keeps it alive (heartbeats, pings)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import trio
from trio_websocket import ConnectionClosed, WebSocketConnection

__all__ = ["keep_pinging", "read_beside"]

log = logging.getLogger("hermes_actors.platform.gateway")


async def read_beside(
    socket: WebSocketConnection,
    read: Callable[[WebSocketConnection], Awaitable[None]],
    keeper: Callable[[WebSocketConnection], Awaitable[None]],
) -> None:
    """Run ``read`` until it returns, with ``keeper`` running beside it (cancelled when ``read`` ends).

    Raises:
        ConnectionClosed: the socket closed under ``read``, raised as itself rather than wrapped in an
            exception group by the nursery, so callers can tell a closed socket by its type.
    """
    closed: ConnectionClosed | None = None
    async with trio.open_nursery() as nursery:
        nursery.start_soon(keeper, socket)
        try:
            await read(socket)
        except ConnectionClosed as exc:
            closed = exc
        finally:
            nursery.cancel_scope.cancel()
    if closed is not None:
        raise closed


async def keep_pinging(socket: WebSocketConnection, every: float, within: float, name: str) -> None:
    """Ping ``socket`` every ``every`` seconds; no pong within ``within`` means a dead connection, closed
    (code 1001) for the read loop to see. Returns when the socket is closed."""
    while True:
        await trio.sleep(every)
        with trio.move_on_after(within) as waiting:
            try:
                await socket.ping()
            except ConnectionClosed:
                return  # the read loop hears of it too
        if waiting.cancelled_caught:
            log.warning("%s: no pong within %.0f s; reconnecting", name, within)
            await socket.aclose(1001, "no pong")
            return
