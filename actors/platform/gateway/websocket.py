"""A platform's WebSocket read beside a task that keeps it alive (heartbeats, pings)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import trio
from trio_websocket import ConnectionClosed, WebSocketConnection

__all__ = ["read_beside"]


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
