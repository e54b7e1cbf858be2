"""Shared fixtures for the whole suite."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from supervisor import ActorSystem, open_actor_system
from tests.postgres_server import PostgresServer, fresh_database


@pytest.fixture
async def system() -> AsyncIterator[ActorSystem]:
    """A running actor system; after the test, nothing may be left registered."""
    async with open_actor_system() as running:
        yield running
    assert running.registry.paths() == [], f"actors left registered: {running.registry.paths()}"


@pytest.fixture(scope="session")
def postgres_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PostgresServer]:
    """One private PostgreSQL server for the whole test run, started when a test first needs it."""
    server = PostgresServer(tmp_path_factory.mktemp("postgres"))
    yield server
    server.stop()


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> Iterator[str]:
    """The URL of a fresh database of the test's own, dropped afterwards."""
    with fresh_database(postgres_server) as url:
        yield url
