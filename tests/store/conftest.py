"""Fixtures: an open SQLite store on a temporary file, and every store implementation in turn (SQLite,
PostgreSQL on a fresh database, in-memory)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from config.store import StoreConfig
from store import InMemorySessionStore, SqliteSessionStore
from store.postgres import PostgresSessionStore
from tests.postgres_server import fresh_database

CONFIG = StoreConfig(busy_timeout_seconds=5.0)


@asynccontextmanager
async def _open(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    if kind == "memory":
        yield InMemorySessionStore()
    elif kind == "sqlite":
        async with SqliteSessionStore.open(tmp_path / "state.db", CONFIG) as store:
            yield store
    else:
        with fresh_database(request.getfixturevalue("postgres_server")) as url:
            async with PostgresSessionStore.open(url, CONFIG) as store:
                yield store


@pytest.fixture
async def sqlite_store(tmp_path: Path) -> AsyncIterator[SqliteSessionStore]:
    """A running SqliteSessionStore on tmp_path/state.db."""
    async with SqliteSessionStore.open(tmp_path / "state.db", CONFIG) as store:
        yield store


@pytest.fixture(params=["sqlite", "postgres"])
async def sql_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    """Each relational store in turn: SQLite, then PostgreSQL."""
    async with _open(request.param, request, tmp_path) as store:
        yield store


@pytest.fixture(params=["sqlite", "postgres", "memory"])
async def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    """Each SessionStore implementation in turn."""
    async with _open(request.param, request, tmp_path) as store:
        yield store
