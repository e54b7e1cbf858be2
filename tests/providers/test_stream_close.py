"""Leaving a stream early closes its body iterators in the reader's task, none left to the collector."""

from __future__ import annotations

import gc
import warnings

import pytest
import trio
import trio.testing

from .conftest import MODES, adapter_for, request

# The generators whose finalization by the collector raced httpx2's own closing links
# (``aiter_bytes`` -> ``aiter_raw`` -> ``BoundAsyncStream`` -> our guard). httpx2's
# transport stream does not close the connection pool's generator it iterates, so
# httpcore2's is left to trio's finalizer whatever we do; nothing else closes it
# concurrently.
BODY_GENERATORS = ("'httpx2._models.", "'httpx2._client.", "'providers.")


def body_generators_collected(caught: list[warnings.WarningMessage]) -> list[str]:
    """The trio 'garbage collected before it had been exhausted' warnings about body iterators."""
    texts = [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]
    return [t for t in texts if "was garbage collected" in t and any(name in t for name in BODY_GENERATORS)]


@pytest.mark.parametrize("mode", MODES)
async def test_leaving_early_leaves_nothing_to_the_collector(server, pool, mode):
    server.push({"text": " ".join(f"w{i}" for i in range(200)), "chunk_delay": 0.01})
    adapter = adapter_for(server, pool, mode)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        async with adapter.stream(request()) as events:
            async for _event in events:
                break
        del events, _event
        # Trio closes what the collector found in system tasks, which may free
        # more of the chain: collect until nothing more is found.
        while gc.collect():
            await trio.testing.wait_all_tasks_blocked()
    assert body_generators_collected(caught) == []
    with trio.fail_after(5):
        await server.wait_disconnects(1)
