"""The daemon's store, as ``config.yaml`` chooses it: PostgreSQL at ``store.url``, else SQLite in the home."""

from __future__ import annotations

from pathlib import Path

from config.store import StoreConfig
from store.sql.store import SqlSessionStore

__all__ = ["make_store"]


def make_store(config: StoreConfig, home: Path) -> SqlSessionStore:
    """A store that is not running yet (start it with ``run``, as ``StoreActor`` does).

    psycopg is imported only when PostgreSQL is chosen: a daemon on SQLite never loads it.
    """
    if config.url is not None:
        from store.postgres import PostgresSessionStore

        return PostgresSessionStore(config.url, config)
    from store.sqlite import DB_FILENAME, SqliteSessionStore

    return SqliteSessionStore(home / DB_FILENAME, config)
