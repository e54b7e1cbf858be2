"""What the fake platforms' WebSocket servers share: a trio-websocket server in a thread of its own."""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager

import trio
from trio_websocket import WebSocketRequest, serve_websocket

__all__ = ["serving_websocket"]


@contextmanager
def serving_websocket(handler: Callable[[WebSocketRequest], Awaitable[None]]) -> Iterator[tuple[str, trio.lowlevel.TrioToken]]:
    """Serve ``handler`` on 127.0.0.1 in a thread running Trio; its ``ws://`` address, and the Trio token
    that lets the test's thread run code there. Stopped at the end."""
    ready, stop = threading.Event(), threading.Event()
    started: list[tuple[str, trio.lowlevel.TrioToken]] = []

    async def server() -> None:
        async with trio.open_nursery() as nursery:
            listener = await nursery.start(serve_websocket, handler, "127.0.0.1", 0, None)
            started.append((f"ws://127.0.0.1:{listener.port}", trio.lowlevel.current_trio_token()))
            ready.set()
            await trio.to_thread.run_sync(stop.wait)
            nursery.cancel_scope.cancel()

    thread = threading.Thread(target=trio.run, args=(server,), daemon=True)
    thread.start()
    assert ready.wait(10), "the fake WebSocket server did not start"
    try:
        yield started[0]
    finally:
        stop.set()
        thread.join(10)
