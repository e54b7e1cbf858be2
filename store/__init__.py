"""The session store: durable sessions, their history, state, transcript and search.

``SessionStore`` (``store.protocol``) is what the rest of the daemon calls;
``SqliteSessionStore`` is the daemon's implementation, ``InMemorySessionStore``
the one for tests.
"""

from __future__ import annotations

from store.errors import (
    CorruptDatabaseError,
    DatabaseLockedError,
    ForeignDatabaseError,
    InvalidQueryError,
    InvalidRecordError,
    MessageNotFoundError,
    SchemaVersionError,
    SessionExistsError,
    SessionNotFoundError,
    StoreClosedError,
    StoreError,
    StoreIOError,
    TitleConflictError,
)
from store.memory import InMemorySessionStore
from store.protocol import DEFAULT_SEARCH_ROLES, SessionSearchReader, SessionStore
from store.records import (
    LoadedSession,
    SearchHit,
    SessionExcerpt,
    SessionInfo,
    SessionMatches,
    SessionMeta,
    StoredMessage,
    TranscriptRecord,
)
from store.sqlite import DB_FILENAME, SqliteSessionStore, WriterStatistics

__all__ = [
    "DB_FILENAME",
    "DEFAULT_SEARCH_ROLES",
    "CorruptDatabaseError",
    "DatabaseLockedError",
    "ForeignDatabaseError",
    "InMemorySessionStore",
    "InvalidQueryError",
    "InvalidRecordError",
    "LoadedSession",
    "MessageNotFoundError",
    "SchemaVersionError",
    "SearchHit",
    "SessionExcerpt",
    "SessionExistsError",
    "SessionInfo",
    "SessionMatches",
    "SessionMeta",
    "SessionNotFoundError",
    "SessionSearchReader",
    "SessionStore",
    "SqliteSessionStore",
    "StoreClosedError",
    "StoreError",
    "StoreIOError",
    "StoredMessage",
    "TitleConflictError",
    "TranscriptRecord",
    "WriterStatistics",
]
