"""SQLite as the single writer (``store.sql.writer``) meets it: ``BEGIN IMMEDIATE`` retried while
another connection holds the write lock, and a PASSIVE WAL checkpoint every ``checkpoint_every`` commits."""

from __future__ import annotations

import logging
import sqlite3

from store.errors import StoreError
from store.sql.writer import WriteBusy
from store.sqlite.translate import is_busy, translate

__all__ = ["SqliteWriterDialect"]

log = logging.getLogger(__name__)


class SqliteWriterDialect:
    """``WriterDialect`` for an SQLite write connection.

    Args:
        busy_timeout_seconds: restored as the connection's busy timeout after each ``BEGIN IMMEDIATE``.
    """

    errors: tuple[type[Exception], ...] = (sqlite3.Error,)

    def __init__(self, busy_timeout_seconds: float) -> None:
        self._busy_timeout_ms = int(busy_timeout_seconds * 1000)

    def begin(self, conn: sqlite3.Connection) -> None:
        """``BEGIN IMMEDIATE``; ``WriteBusy`` when the write lock is taken."""
        try:
            # SQLite's own busy handler would sleep inside the lock convoy; the writer retries with jitter instead.
            conn.execute("PRAGMA busy_timeout = 0")
            try:
                conn.execute("BEGIN IMMEDIATE")
            finally:
                conn.execute(f"PRAGMA busy_timeout = {self._busy_timeout_ms}")
        except sqlite3.Error as exc:
            if is_busy(exc):
                raise WriteBusy from exc
            raise translate(exc, "cannot start a write transaction") from exc

    def fails_batch(self, exc: Exception) -> bool:
        """Any SQLite error but a constraint's (a request refused) is the connection's or the file's."""
        return not isinstance(exc, sqlite3.IntegrityError)

    def translate(self, exc: BaseException, context: str = "") -> StoreError:
        """See ``store.sqlite.translate``."""
        return translate(exc, context)

    def in_transaction(self, conn: sqlite3.Connection) -> bool:
        """SQLite's own flag."""
        return conn.in_transaction

    def usable(self, conn: sqlite3.Connection) -> bool:
        """A file connection does not break as a network one does."""
        return True

    def checkpoint(self, conn: sqlite3.Connection) -> bool:
        """A PASSIVE WAL checkpoint (never blocking readers)."""
        try:
            conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
        except sqlite3.Error as exc:
            # The writes are committed; a failed checkpoint only delays WAL truncation.
            log.warning("store: WAL checkpoint failed: %s", exc)
            return False
        return True

    def close(self, conn: sqlite3.Connection) -> None:
        """Close it (the last close of a WAL database checkpoints it)."""
        conn.close()
