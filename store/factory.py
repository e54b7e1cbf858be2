"""The daemon's store, as ``config.yaml`` chooses it: PostgreSQL at ``store.url``, else SQLite in the home."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from pathlib import Path

from config.store import StoreConfig
from store.sql.store import SqlSessionStore

__all__ = ["lease_directory", "make_store", "open_store"]


def make_store(config: StoreConfig, home: Path, holder: str | None = None) -> SqlSessionStore:
    """A store that is not running yet (start it with ``run``, as ``StoreActor`` does).

    ``holder`` names this process when several processes of one daemon share the store (the front
    and its hosts): on SQLite their leases are then file locks (``store.sqlite.leases``); PostgreSQL's
    advisory locks need nothing more. psycopg is imported only when PostgreSQL is chosen: a daemon on
    SQLite never loads it.
    """
    if config.url is not None:
        from store.postgres import PostgresSessionStore

        return PostgresSessionStore(config.url, config)
    from store.sqlite import DB_FILENAME, SqliteSessionStore
    from store.sqlite.leases import FileLeases

    leases = FileLeases(lease_directory(home), holder) if holder is not None else None
    return SqliteSessionStore(home / DB_FILENAME, config, leases)


def lease_directory(home: Path) -> Path:
    """Where the processes of one daemon on SQLite keep their session leases."""
    return home / "run" / "leases"


def open_store(config: StoreConfig, home: Path) -> AbstractAsyncContextManager[SqlSessionStore]:
    """The store ``config.yaml`` chooses, open for the duration of an ``async with`` block, for a command
    that works while no daemon runs (``import-hermes``); on exit queued writes commit, then it closes.

    Raises:
        StoreError: the database is unusable or cannot be reached.
    """
    return make_store(config, home)._running()
