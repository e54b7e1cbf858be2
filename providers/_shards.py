"""Connection pools in shards, so that no request scans hundreds of idle connections.

httpcore's pool re-examines every connection it holds whenever a request starts or ends, and probes
each idle one with a ``poll`` syscall (has the server closed it?). With 200 sessions streaming from
one provider, each request paid about 400 probes; in shards of 8, at most 16.

:class:`ShardedTransport` spreads the requests over several transports of at most
:data:`SHARD_CONNECTIONS` kept-alive connections each, sending every request to the first shard with
room: one session's sequential requests stay on the first shard (and its one connection), and a burst
of 40 fills the first five shards, which the next burst finds again.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Callable
from typing import cast

import httpx2

__all__ = ["SHARD_CONNECTIONS", "ShardedTransport"]

# Kept-alive connections per shard: a pool scan costs about this many probes.
SHARD_CONNECTIONS = 8


class _Shard:
    """One transport and how many of its responses are still open."""

    __slots__ = ("in_flight", "transport")

    def __init__(self, transport: httpx2.AsyncBaseTransport) -> None:
        self.transport = transport
        self.in_flight = 0


class _CountedStream(httpx2.AsyncByteStream):
    """A response body that releases its shard's count once, when closed."""

    def __init__(self, inner: httpx2.AsyncByteStream, shard: _Shard) -> None:
        self._inner = inner
        self._shard: _Shard | None = shard

    def __aiter__(self) -> AsyncIterator[bytes]:
        # The wrapped iterator itself: no extra generator to resume per chunk.
        return self._inner.__aiter__()

    async def aclose(self) -> None:
        """Close the wrapped body, then release the count."""
        try:
            await self._inner.aclose()
        finally:
            if self._shard is not None:
                self._shard.in_flight -= 1
                self._shard = None


class ShardedTransport(httpx2.AsyncBaseTransport):
    """Routes each request to the first of up to ``max_keepalive / SHARD_CONNECTIONS`` transports with room.

    Args:
        make: builds one shard's transport, given its connection limits.
        limits: the limits of the whole, split evenly over the shards.
    """

    def __init__(self, make: Callable[[httpx2.Limits], httpx2.AsyncBaseTransport], limits: httpx2.Limits) -> None:
        keepalive = limits.max_keepalive_connections or SHARD_CONNECTIONS
        self._count = max(1, math.ceil(keepalive / SHARD_CONNECTIONS))
        connections = limits.max_connections
        # A shard has room while it runs fewer requests than the connections it keeps alive.
        self._room = math.ceil(keepalive / self._count)
        self._limits = httpx2.Limits(
            max_connections=None if connections is None else max(1, math.ceil(connections / self._count)),
            max_keepalive_connections=self._room,
            keepalive_expiry=limits.keepalive_expiry,
        )
        self._make = make
        self._shards: list[_Shard] = []

    @property
    def shards(self) -> int:
        """Shards opened so far (they open as concurrency needs them)."""
        return len(self._shards)

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        """Send through the least busy shard; the shard counts the request until its body is closed."""
        shard = self._pick()
        shard.in_flight += 1
        try:
            response = await shard.transport.handle_async_request(request)
        except BaseException:
            shard.in_flight -= 1
            raise
        # An async transport's body is an async stream (the union is httpx's type for both kinds of client).
        response.stream = _CountedStream(cast("httpx2.AsyncByteStream", response.stream), shard)
        return response

    def _pick(self) -> _Shard:
        # The first shard with room, in order: the same burst finds the same connections again.
        for shard in self._shards:
            if shard.in_flight < self._room:
                return shard
        if len(self._shards) < self._count:
            self._shards.append(_Shard(self._make(self._limits)))
            return self._shards[-1]
        return min(self._shards, key=lambda shard: shard.in_flight)

    async def aclose(self) -> None:
        """Close every shard's transport."""
        for shard in self._shards:
            await shard.transport.aclose()
