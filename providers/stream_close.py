"""Closing an SDK stream's body iterators in the task that read them.

The ``openai`` and ``anthropic`` ``AsyncStream`` read the response through
``response.aiter_bytes()``, an async generator that, through httpx2's own
``aclosing`` links, holds ``aiter_raw`` and the transport's body iterator.
``AsyncStream.close()`` only closes the response: a stream left before its end
leaves that chain suspended for the garbage collector. Trio then closes each
generator of the chain in its own system task, concurrently, while httpx2's
links close the same generators from the outer ones; under load a collection
that runs in a worker thread met a generator mid-close and raised ``ValueError:
async generator already executing`` as an unraisable exception.

:func:`hold_body_iterator` keeps hold of the generator the SDK opens, and
:func:`close_stream` closes it (and so the whole httpx2 chain, innermost last)
in the caller's task before closing the response. What the SDK's own generators
still hold afterwards is a closed response, whose ``aclose`` returns at once.

A stream whose reply is complete (its protocol's last event was parsed) is not
read to the end of its body by the turn: :class:`StreamCloser` reads the rest
and returns the connection to its pool in the background (:func:`finish_stream`),
so a server whose body end lags (written separately, without ``TCP_NODELAY``)
delays no turn, and the connection is still reused.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import Any

import httpx2
import trio

from ._translate import sdk_errors

__all__ = [
    "CLOSE_GRACE_SECONDS", "BodyIterators", "StreamCloser", "close_quietly", "close_stream", "finish_stream",
    "hold_body_iterator",
]

log = logging.getLogger(__name__)

# How long closing (or finishing) a stream may take; it runs shielded from cancellation.
CLOSE_GRACE_SECONDS = 2.0


class BodyIterators:
    """The byte iterators opened on one response, in the order they were opened."""

    def __init__(self) -> None:
        self.opened: list[AsyncIterator[bytes]] = []

    async def drain(self) -> None:
        """Read what is left of the body through the first iterator opened on it (the one the SDK reads)."""
        if self.opened:
            async for _ in self.opened[0]:
                pass

    async def aclose(self) -> None:
        """Close every iterator that is an async generator, newest first."""
        while self.opened:
            iterator = self.opened.pop()
            if isinstance(iterator, AsyncGenerator):
                await iterator.aclose()


def hold_body_iterator(response: httpx2.Response) -> BodyIterators:
    """Record the byte iterators anyone opens on ``response`` from now on.

    Call before the first read. An instance attribute shadows the method, so
    only this response is affected.
    """
    held = BodyIterators()
    original = response.aiter_bytes

    def aiter_bytes(chunk_size: int | None = None) -> AsyncGenerator[bytes, None]:
        iterator = original(chunk_size)
        held.opened.append(iterator)
        return iterator

    # Shadowing one instance's method is the point (see above); the checker refuses it in general.
    response.aiter_bytes = aiter_bytes  # type: ignore[method-assign]
    return held


async def close_stream(stream: Any, held: BodyIterators) -> None:
    """Close an SDK ``AsyncStream``: its body iterators first, then its response."""
    try:
        await held.aclose()
    finally:
        await stream.close()


async def finish_stream(stream: Any, held: BodyIterators) -> None:
    """Close an SDK ``AsyncStream`` whose reply is complete: read the rest of its body first, so
    that an HTTP/1.1 connection goes back to its pool instead of being closed."""
    try:
        await held.drain()
    finally:
        await close_stream(stream, held)


async def close_quietly(close: Callable[[], Awaitable[None]]) -> None:
    """Close an SDK stream even when the caller is being cancelled.

    Shielded so the connection is released at once (an unshielded ``await``
    would be cancelled before the socket closes), bounded by a grace period.
    """
    with trio.move_on_after(CLOSE_GRACE_SECONDS, shield=True):
        try:
            await close()
        except sdk_errors():
            pass  # closing a broken stream may fail again; the socket is gone either way


class StreamCloser:
    """Finishes complete streams in the background, off the turn's critical path.

    One per client pool. Each close runs in a Trio system task (the pool has no nursery of its own and
    outlives every session), bounded by :data:`CLOSE_GRACE_SECONDS`; :meth:`wait_idle` returns once
    none is left, which the pool awaits before closing its clients.
    """

    def __init__(self) -> None:
        self._running = 0
        self._idle = trio.Event()
        self._idle.set()

    @property
    def running(self) -> int:
        """Closes under way."""
        return self._running

    def close_later(self, close: Callable[[], Awaitable[None]]) -> None:
        """Run ``close`` (quietly, bounded) in the background."""
        if self._running == 0:
            self._idle = trio.Event()
        self._running += 1
        trio.lowlevel.spawn_system_task(self._close, close, name="provider stream close")

    async def wait_idle(self) -> None:
        """Return once every close handed over so far has finished."""
        await self._idle.wait()

    async def _close(self, close: Callable[[], Awaitable[None]]) -> None:
        try:
            await close_quietly(close)
        except Exception:
            # A system task must not raise: the reply was already delivered, only the connection is lost.
            log.exception("finishing a complete provider stream failed")
        finally:
            self._running -= 1
            if self._running == 0:
                self._idle.set()
