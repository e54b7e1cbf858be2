"""The one place SQLite's exceptions become the store's (see ``store.errors``)."""

from __future__ import annotations

import sqlite3

from store.errors import (
    CorruptDatabaseError,
    DatabaseLockedError,
    InvalidRecordError,
    SessionExistsError,
    StoreError,
    StoreIOError,
    TitleConflictError,
)

__all__ = ["is_busy", "translate"]

# Primary result codes (https://sqlite.org/rescode.html).
_BUSY, _LOCKED, _READONLY, _IOERR, _CORRUPT, _FULL, _CANTOPEN, _CONSTRAINT, _NOTADB = 5, 6, 8, 10, 11, 13, 14, 19, 26


def _code(exc: BaseException) -> int | None:
    code = getattr(exc, "sqlite_errorcode", None)
    return None if code is None else code & 0xFF


def is_busy(exc: BaseException) -> bool:
    """Whether ``exc`` says another connection holds the lock we need."""
    return isinstance(exc, sqlite3.OperationalError) and _code(exc) in (_BUSY, _LOCKED)


def translate(exc: BaseException, context: str = "") -> StoreError:
    """The store error for a lower-layer one; the caller raises it ``from exc``."""
    prefix = f"{context}: " if context else ""
    message = f"{prefix}{exc}"
    if isinstance(exc, StoreError):
        return exc
    if isinstance(exc, OSError):
        return StoreIOError(message)
    code = _code(exc)
    if code in (_BUSY, _LOCKED):
        return DatabaseLockedError(f"{prefix}the database is locked by another connection ({exc})")
    if code in (_CORRUPT, _NOTADB):
        return CorruptDatabaseError(message)
    if code in (_IOERR, _FULL, _READONLY, _CANTOPEN):
        return StoreIOError(message)
    if code == _CONSTRAINT or isinstance(exc, sqlite3.IntegrityError):
        text = str(exc)
        if "sessions.title" in text:
            return TitleConflictError(f"{prefix}a session with that title already exists")
        if "sessions.id" in text:
            return SessionExistsError(f"{prefix}a session with that id already exists")
        return InvalidRecordError(message)
    return StoreError(message)
