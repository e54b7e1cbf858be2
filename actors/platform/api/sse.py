"""A Server-Sent Events response that notices a client leaving.

Starlette's streaming response hides the disconnect inside an iterator; here the
producer runs in a nursery next to a task reading ``http.disconnect``, so a
client that goes away cancels the producer at once and :attr:`disconnected`
says so (the producer's own ``finally`` decides what that means for its turn).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import trio

__all__ = ["Emit", "SseResponse"]

Emit = Callable[[bytes], Awaitable[None]]

_BASE_HEADERS = (
    (b"content-type", b"text/event-stream; charset=utf-8"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
)


class SseResponse:
    """An ASGI response streaming what ``producer`` emits.

    Args:
        producer: called with ``emit``; each call sends one chunk of the body.
        headers: extra response headers.
        after: awaited once the response has ended, however it ended (work the client need not wait for).
    """

    def __init__(
        self, producer: Callable[[Emit], Awaitable[None]], headers: Mapping[str, str] | None = None,
        after: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self._producer = producer
        self._after = after
        self._headers = [*_BASE_HEADERS, *((k.lower().encode(), v.encode()) for k, v in (headers or {}).items())]
        self.disconnected = False

    async def __call__(self, scope: Any, receive: Callable[[], Awaitable[Any]], send: Callable[[Any], Awaitable[None]]) -> None:
        try:
            await self._respond(receive, send)
        finally:
            if self._after is not None:
                await self._after()

    async def _respond(self, receive: Callable[[], Awaitable[Any]], send: Callable[[Any], Awaitable[None]]) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": self._headers})

        async def emit(data: bytes) -> None:
            await send({"type": "http.response.body", "body": data, "more_body": True})

        async with trio.open_nursery() as nursery:

            async def watch_disconnect() -> None:
                while (await receive())["type"] != "http.disconnect":
                    pass
                self.disconnected = True
                nursery.cancel_scope.cancel(reason="client disconnected")

            nursery.start_soon(watch_disconnect)
            await self._producer(emit)
            nursery.cancel_scope.cancel(reason="stream complete")
        if not self.disconnected:
            await send({"type": "http.response.body", "body": b"", "more_body": False})
