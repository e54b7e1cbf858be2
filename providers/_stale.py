"""Stale-stream detection at the byte level, for free per chunk.

A cancel scope around every SDK chunk read costs several microseconds, which
on a fast stream is most of the adapter's overhead. Instead the pool's HTTP
clients use :class:`StaleGuardTransport`: it wraps each response body so that
a *socket read* carries the deadline "last chunk + stale timeout" whenever
that deadline would come before the read timeout already on the read (with
the defaults, 90 s vs 60 s, only after 30 s without a chunk: a fast stream
pays no scope at all). The adapter only counts the chunks it receives (an
integer increment); a read that hits the deadline raises ``httpx2.ReadTimeout``
with :attr:`StaleGuard.fired` set, which the adapter reports as ``StreamStalled``.

Keep-alive bytes that produce no chunk (SSE comments, pings the SDK drops) do
not push the deadline back: "stale" means no *chunk*, as the specification says.
"""

from __future__ import annotations

import math
from collections.abc import AsyncGenerator, AsyncIterator
from typing import cast

import httpx2
import trio

# Request extension under which the transport leaves the guard of a response.
GUARD_EXTENSION = "hermes_stale_guard"


class StaleGuard:
    """Shared between one response body and the adapter reading its chunks.

    Invariant: ``events`` only grows; ``last_seen``/``last_time`` record the
    count and time at the last socket read that saw it change.
    """

    def __init__(self, read_timeout: float | None = None) -> None:
        self.read_timeout = math.inf if read_timeout is None else read_timeout
        self.stale_timeout = math.inf
        self.events = 0
        self.fired = False
        self._last_seen = 0
        self._last_time = 0.0

    def arm(self, stale_timeout: float) -> None:
        """Start enforcing ``stale_timeout`` seconds between chunks, from now."""
        self.stale_timeout = stale_timeout
        self._last_seen = self.events
        self._last_time = trio.current_time()

    def deadline(self) -> float:
        """The deadline for the next socket read."""
        if self.stale_timeout == math.inf:
            return math.inf
        if self.events != self._last_seen:
            self._last_seen = self.events
            self._last_time = trio.current_time()
        return self._last_time + self.stale_timeout


class GuardedByteStream(httpx2.AsyncByteStream):
    """A response body whose reads honour a :class:`StaleGuard` deadline."""

    def __init__(self, inner: httpx2.AsyncByteStream, guard: StaleGuard) -> None:
        self._inner = inner
        self._guard = guard

    async def __aiter__(self) -> AsyncIterator[bytes]:
        chunks = self._inner.__aiter__()
        try:
            while True:
                chunk = await self._read(chunks)
                if chunk is None:
                    return
                yield chunk
        finally:
            # Closed here, in the reader's task: left to the garbage collector,
            # the transport's generator would be closed concurrently with this one.
            if isinstance(chunks, AsyncGenerator):
                await chunks.aclose()

    async def _read(self, chunks: AsyncIterator[bytes]) -> bytes | None:
        """The next chunk, or None at the end; honours the guard's deadline."""
        guard = self._guard
        deadline = guard.deadline()
        if deadline - trio.current_time() > guard.read_timeout:
            # The transport's own read timeout fires first: no scope needed.
            try:
                return await chunks.__anext__()
            except StopAsyncIteration:
                return None
        with trio.CancelScope(deadline=deadline):
            try:
                return await chunks.__anext__()
            except StopAsyncIteration:
                return None
        # Only reached when the deadline fired: the read returns otherwise.
        guard.fired = True
        raise httpx2.ReadTimeout("no stream chunk within the stale timeout")

    async def aclose(self) -> None:
        """Close the wrapped body (and so the connection, if unfinished)."""
        await self._inner.aclose()


class StaleGuardTransport(httpx2.AsyncBaseTransport):
    """Wraps a transport so every response body carries a :class:`StaleGuard`."""

    def __init__(self, inner: httpx2.AsyncBaseTransport) -> None:
        self._inner = inner

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        """Send through the wrapped transport; guard the body."""
        response = await self._inner.handle_async_request(request)
        guard = StaleGuard((request.extensions.get("timeout") or {}).get("read"))
        request.extensions[GUARD_EXTENSION] = guard
        # An async transport's body is an async stream (the union is httpx's type for both kinds of client).
        response.stream = GuardedByteStream(cast("httpx2.AsyncByteStream", response.stream), guard)
        return response

    async def aclose(self) -> None:
        """Close the wrapped transport."""
        await self._inner.aclose()


def guard_of(response: httpx2.Response) -> StaleGuard | None:
    """The guard of a response from a :class:`StaleGuardTransport`, if any."""
    guard = response.request.extensions.get(GUARD_EXTENSION)
    return guard if isinstance(guard, StaleGuard) else None
