"""StoreConfig: seed defaults, and bad values rejected at load time."""

from __future__ import annotations

from typing import Any

import pytest

from config.store import StoreConfig


class TestStoreConfig:
    """Defaults follow the seeds; validators refuse nonsense."""

    def test_defaults(self) -> None:
        config = StoreConfig()
        assert (config.busy_timeout_seconds, config.checkpoint_every, config.batch_max) == (30.0, 50, 256)

    @pytest.mark.parametrize(
        "kwargs",
        [
            {"busy_timeout_seconds": 0},
            {"busy_timeout_seconds": "soon"},
            {"checkpoint_every": 0},
            {"batch_max": 1.5},
            {"read_connections": 0},
            {"synchronous": "off"},
        ],
    )
    def test_rejects(self, kwargs: dict[str, Any]) -> None:
        with pytest.raises((ValueError, TypeError)):
            StoreConfig(**kwargs)
