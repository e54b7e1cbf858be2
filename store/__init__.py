"""The session store: durable sessions, their history, state, transcript and search.

``SessionStore`` (``store.protocol``) is what the rest of the daemon calls;
``SqliteSessionStore`` is the daemon's implementation, ``InMemorySessionStore``
the one for tests.

Names load from their submodules on first use, so importing the records or
the errors (as the CLI side does) pulls in neither Trio nor SQLite.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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
        SessionOwnedElsewhere,
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

_EXPORTS = {
    **dict.fromkeys(
        [
            "CorruptDatabaseError",
            "DatabaseLockedError",
            "ForeignDatabaseError",
            "InvalidQueryError",
            "InvalidRecordError",
            "MessageNotFoundError",
            "SchemaVersionError",
            "SessionExistsError",
            "SessionNotFoundError",
            "SessionOwnedElsewhere",
            "StoreClosedError",
            "StoreError",
            "StoreIOError",
            "TitleConflictError",
        ],
        "errors",
    ),
    "InMemorySessionStore": "memory",
    **dict.fromkeys(["DEFAULT_SEARCH_ROLES", "SessionSearchReader", "SessionStore"], "protocol"),
    **dict.fromkeys(
        [
            "LoadedSession",
            "SearchHit",
            "SessionExcerpt",
            "SessionInfo",
            "SessionMatches",
            "SessionMeta",
            "StoredMessage",
            "TranscriptRecord",
        ],
        "records",
    ),
    **dict.fromkeys(["DB_FILENAME", "SqliteSessionStore", "WriterStatistics"], "sqlite"),
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    """Load an exported name from its submodule on first use."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


def __dir__() -> list[str]:
    """The exported names."""
    return __all__
