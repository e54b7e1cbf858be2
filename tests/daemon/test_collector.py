"""The daemon's collector settings: young collections less often, the start-up heap frozen."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from actors.platform.daemon.collector import YOUNG_THRESHOLD, freeze_startup_heap, tune_collector


@pytest.fixture
def restored_collector() -> Iterator[None]:
    """Put the test process's collector back as it was."""
    threshold = gc.get_threshold()
    try:
        yield
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)


@pytest.mark.usefixtures("restored_collector")
def test_young_collections_are_rarer() -> None:
    tune_collector()
    assert gc.get_threshold()[0] == YOUNG_THRESHOLD > 700


@pytest.mark.usefixtures("restored_collector")
def test_what_exists_when_ready_is_never_walked_again() -> None:
    kept = [[] for _ in range(1000)]
    freeze_startup_heap()
    assert gc.get_freeze_count() >= len(kept)
    walked = {id(obj) for generation in range(3) for obj in gc.get_objects(generation=generation)}
    assert not walked & {id(item) for item in kept}
