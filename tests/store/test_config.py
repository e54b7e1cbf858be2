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
            {"url": "mysql://user:pw@host/db"},
            {"url": "state.db"},
            {"url": 5},
            {"pool_size": 0},
            {"lease_check_seconds": 0},
        ],
    )
    def test_rejects(self, kwargs: dict[str, Any]) -> None:
        with pytest.raises((ValueError, TypeError)):
            StoreConfig(**kwargs)

    def test_a_bad_url_is_refused_without_showing_it(self) -> None:
        """The URL may hold a password: the error names only its scheme."""
        with pytest.raises(ValueError) as refused:
            StoreConfig(url="mysql://admin:hunter2@db.internal/prod")
        assert "mysql://" in str(refused.value) and "hunter2" not in str(refused.value)

    def test_a_postgresql_url(self) -> None:
        assert StoreConfig(url="postgresql://u@host/db").url == "postgresql://u@host/db"
        assert StoreConfig(url="postgres://u@host/db").url == "postgres://u@host/db"
