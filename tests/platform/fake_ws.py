"""What the fake platforms' WebSocket servers share: a trio-websocket server in a thread of its own, and the
fake's side of its one client connection (frames sent from the test's thread, the socket dropped)."""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any

import trio
from trio_websocket import ConnectionClosed, WebSocketConnection, WebSocketRequest, serve_websocket

from tests.platform.fake_http import FakePlatform

__all__ = ["SocketFake", "serving_websocket"]


class SocketFake(FakePlatform):
    """A fake whose server holds one client WebSocket (``connection``) in its own Trio thread
    (``trio_token``); the test's thread sends and drops through it."""

    def __init__(self) -> None:
        super().__init__()
        self.connection: WebSocketConnection | None = None
        self.trio_token: trio.lowlevel.TrioToken | None = None

    def push_frame(self, frame: str) -> None:
        """Any text frame, exactly as given (a malformed one, for the client's robustness)."""
        self._from_thread(self._send_raw, frame)

    def drop(self) -> None:
        """End the socket as a failing network would (close code 1011)."""
        self._from_thread(self._close, 1011)

    def _from_thread(self, function: Any, *args: Any) -> None:
        trio.from_thread.run(function, *args, trio_token=self.trio_token)

    async def _send_raw(self, frame: str) -> None:
        if self.connection is not None:
            try:
                await self.connection.send_message(frame)
            except ConnectionClosed:
                self.connection = None

    async def _close(self, code: int) -> None:
        connection, self.connection = self.connection, None
        if connection is not None:
            await connection.aclose(code)


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
