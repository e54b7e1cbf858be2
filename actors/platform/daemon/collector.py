"""The daemon's settings for Python's cyclic garbage collector.

A daemon serving many sessions allocates a great many short-lived objects per turn (HTTP and SSE
parsing, events, Trio's tasks and cancel scopes) and holds a large, fixed heap from start-up (every
provider SDK's modules and types: some 350,000 objects). With CPython's defaults a young collection
runs every 700 net allocations, and every full collection walks the whole start-up heap, which never
becomes garbage: at 200 sessions that was about a quarter of the daemon's CPU (measured in
``bench/RESULTS.md``). So the young generation is collected less often, and what exists once the
daemon is ready is moved out of the collector's reach (``gc.freeze``). Reference counting still frees
nearly everything at once; only reference cycles wait a little longer.
"""

from __future__ import annotations

import gc

__all__ = ["YOUNG_THRESHOLD", "freeze_startup_heap", "tune_collector"]

#: Net allocations between young collections (CPython: 700).
YOUNG_THRESHOLD = 10_000
#: Young collections per middle one, middle per full one (CPython's defaults: 10 and 10).
OLDER_THRESHOLDS = (20, 20)


def tune_collector() -> None:
    """Collect the young generation less often; called once, as the daemon process starts."""
    gc.set_threshold(YOUNG_THRESHOLD, *OLDER_THRESHOLDS)


def freeze_startup_heap() -> None:
    """Exempt every object alive now from later collections; called once the daemon is ready.

    Without a collection first: start-up's own cyclic garbage is small and frozen with the rest,
    while a full collection here would stall the event loop for a tenth of a second at every start.
    """
    gc.freeze()
