"""The SQLite implementation of the session store (WAL, one batching writer, FTS5 search)."""

from __future__ import annotations

from store.sqlite.store import DB_FILENAME, SqliteSessionStore
from store.sql.writer import WriterStatistics

__all__ = ["DB_FILENAME", "SqliteSessionStore", "WriterStatistics"]
