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
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

import httpx2

__all__ = ["BodyIterators", "close_stream", "hold_body_iterator"]


class BodyIterators:
    """The byte iterators opened on one response, in the order they were opened."""

    def __init__(self) -> None:
        self.opened: list[AsyncIterator[bytes]] = []

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

    def aiter_bytes(chunk_size: int | None = None) -> AsyncIterator[bytes]:
        iterator = original(chunk_size)
        held.opened.append(iterator)
        return iterator

    response.aiter_bytes = aiter_bytes  # type: ignore[method-assign]
    return held


async def close_stream(stream: Any, held: BodyIterators) -> None:
    """Close an SDK ``AsyncStream``: its body iterators first, then its response."""
    try:
        await held.aclose()
    finally:
        await stream.close()
