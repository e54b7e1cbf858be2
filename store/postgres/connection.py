"""A psycopg connection as the shared SQL (``store.sql``) expects one, and PostgreSQL's errors as the store's.

The shared queries use ``?`` placeholders; psycopg takes ``%s``, so each statement is translated once
(cached). A read's ``BEGIN`` opens a REPEATABLE READ transaction: PostgreSQL's default isolation gives
each statement its own snapshot, and a multi-statement read must see one, as it does on SQLite.

PostgreSQL's text cannot hold NUL characters, which SQLite's can (a tool's output may have any). Every
string sent is escaped and every text read back unescaped (``_escape``/``_unescape``): U+10FFFF, a
noncharacter, marks an escape; NUL is stored as that mark and ``0``, the mark itself doubled.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from typing import Any

import psycopg
from psycopg import errors as pg_errors
from psycopg.types.string import StrDumperUnknown, TextLoader

from store.errors import (
    DatabaseLockedError,
    InvalidRecordError,
    SessionExistsError,
    StoreError,
    StoreIOError,
    TitleConflictError,
)

__all__ = ["PgConnection", "register_text_escaping", "translate"]

_MARK = "\U0010ffff"
_ESCAPED = re.compile(_MARK + "(.)", re.DOTALL)


def _escape(text: str) -> str:
    if "\x00" not in text and _MARK not in text:
        return text
    return text.replace(_MARK, _MARK + _MARK).replace("\x00", _MARK + "0")


def _unescape(text: str) -> str:
    if _MARK not in text:
        return text
    return _ESCAPED.sub(lambda m: "\x00" if m.group(1) == "0" else m.group(1), text)


class _EscapingStrDumper(StrDumperUnknown):
    """Strings to PostgreSQL text, NUL escaped (see the module docstring)."""

    def dump(self, obj: str) -> bytes:
        return _escape(obj).encode(self._encoding)


class _UnescapingTextLoader(TextLoader):
    """PostgreSQL text to strings, NUL unescaped."""

    def load(self, data: Any) -> Any:
        text = super().load(data)
        return _unescape(text) if isinstance(text, str) else text


def register_text_escaping(conn: psycopg.Connection[Any]) -> None:
    """Make ``conn`` escape NUL in every string it sends and unescape every text it reads."""
    conn.adapters.register_dumper(str, _EscapingStrDumper)
    for type_name in ("text", "varchar"):
        conn.adapters.register_loader(type_name, _UnescapingTextLoader)


@functools.lru_cache(maxsize=512)
def _pyformat(sql: str) -> str:
    if sql == "BEGIN":
        return "BEGIN ISOLATION LEVEL REPEATABLE READ"
    return sql.replace("%", "%%").replace("?", "%s")


class PgConnection:
    """``store.sql.Connection`` over a psycopg connection in autocommit mode (transactions are explicit)."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.raw = conn

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> psycopg.Cursor[Any]:
        """Run one statement written with ``?`` placeholders."""
        return self.raw.execute(_pyformat(sql), parameters or None)

    def executemany(self, sql: str, seq_of_parameters: Iterable[Sequence[Any]], /) -> psycopg.Cursor[Any]:
        """Run one statement once per parameter row (pipelined by psycopg)."""
        cursor = self.raw.cursor()
        cursor.executemany(_pyformat(sql), seq_of_parameters)
        return cursor


_LOCK_STATES = (pg_errors.LockNotAvailable, pg_errors.DeadlockDetected, pg_errors.SerializationFailure)


def translate(exc: BaseException, context: str = "") -> StoreError:
    """The store error for a psycopg (or OS) one; the caller raises it ``from exc``."""
    prefix = f"{context}: " if context else ""
    if isinstance(exc, StoreError):
        return exc
    if isinstance(exc, pg_errors.UniqueViolation):
        constraint = getattr(exc.diag, "constraint_name", None) or ""
        if constraint == "sessions_title":
            return TitleConflictError(f"{prefix}a session with that title already exists")
        if constraint == "sessions_pkey":
            return SessionExistsError(f"{prefix}a session with that id already exists")
        return InvalidRecordError(f"{prefix}{exc}")
    if isinstance(exc, (pg_errors.IntegrityError, pg_errors.DataError)):
        return InvalidRecordError(f"{prefix}{exc}")
    if isinstance(exc, _LOCK_STATES):
        return DatabaseLockedError(f"{prefix}the database refused the transaction ({exc})")
    if isinstance(exc, (OSError, psycopg.OperationalError)):
        return StoreIOError(f"{prefix}{exc}")
    return StoreError(f"{prefix}{exc}")


class PgWriterDialect:
    """``WriterDialect`` (``store.sql.writer``) for a PostgreSQL write connection: a READ COMMITTED
    transaction per batch (the leases keep two hosts from writing one session), never busy, and a
    broken connection replaced before the next batch."""

    errors: tuple[type[Exception], ...] = (psycopg.Error,)

    def begin(self, conn: PgConnection) -> None:
        """``BEGIN`` (PostgreSQL takes row locks as it writes: there is no write lock to wait for)."""
        conn.raw.execute("BEGIN ISOLATION LEVEL READ COMMITTED")

    def fails_batch(self, exc: Exception) -> bool:
        """A request's own error is a constraint or a value the database refused; anything else (a
        lost connection, the server shutting down) is the batch's."""
        return not isinstance(exc, (pg_errors.IntegrityError, pg_errors.DataError))

    def translate(self, exc: BaseException, context: str = "") -> StoreError:
        """See ``translate``."""
        return translate(exc, context)

    def in_transaction(self, conn: PgConnection) -> bool:
        """Whether a transaction is open (or failed and not yet rolled back)."""
        return conn.raw.info.transaction_status != psycopg.pq.TransactionStatus.IDLE

    def usable(self, conn: PgConnection) -> bool:
        """Not closed and not broken."""
        return not (conn.raw.closed or conn.raw.broken)

    def checkpoint(self, conn: PgConnection) -> bool:
        """Nothing: PostgreSQL checkpoints by itself."""
        return False

    def close(self, conn: PgConnection) -> None:
        """Close it."""
        conn.raw.close()
