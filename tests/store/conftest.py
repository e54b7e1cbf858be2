"""Fixtures: an open SQLite store on a temporary file, and both store implementations."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from config.store import StoreConfig
from store import InMemorySessionStore, SqliteSessionStore


@pytest.fixture
async def sqlite_store(tmp_path: Path) -> AsyncIterator[SqliteSessionStore]:
    """A running SqliteSessionStore on tmp_path/state.db."""
    async with SqliteSessionStore.open(tmp_path / "state.db", StoreConfig(busy_timeout_seconds=5.0)) as store:
        yield store


@pytest.fixture(params=["sqlite", "memory"])
async def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SqliteSessionStore | InMemorySessionStore]:
    """Each SessionStore implementation in turn."""
    if request.param == "memory":
        yield InMemorySessionStore()
        return
    async with SqliteSessionStore.open(tmp_path / "state.db", StoreConfig(busy_timeout_seconds=5.0)) as store:
        yield store
