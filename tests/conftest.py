"""Shared fixtures for the whole suite."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator

import pytest

from supervisor import ActorSystem, open_actor_system
from tests.postgres_server import PostgresServer, fresh_database


@pytest.fixture(scope="session", autouse=True)
def runtime_base_of_this_process() -> Iterator[str]:
    """The daemons of this test process (one xdist worker) keep their runtime directories apart.

    A session's jail hides the runtime directories of other homes that it finds beside its own. When
    another test's daemon removes its own between the listing and bubblewrap's mount, the command fails
    with a bwrap error. Tests running in parallel start and stop daemons all the time; each worker gets
    a base directory of its own (``XDG_RUNTIME_DIR``, which the runtime directory takes where the system
    temp directory is ``/tmp``). Between the homes one user runs for real, the race remains.
    """
    base = tempfile.mkdtemp(prefix="hx-t-", dir="/var/tmp")
    saved = os.environ.get("XDG_RUNTIME_DIR")
    os.environ["XDG_RUNTIME_DIR"] = base
    try:
        yield base
    finally:
        if saved is None:
            os.environ.pop("XDG_RUNTIME_DIR", None)
        else:
            os.environ["XDG_RUNTIME_DIR"] = saved
        shutil.rmtree(base, ignore_errors=True)


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
