"""The store's exceptions: one tree, raised by every ``SessionStore`` implementation.

::

    StoreError(Exception)
    ├── StoreClosedError         the store is closed (or its writer stopped); nothing more is accepted
    ├── SessionNotFoundError     no live session with that id (also a LookupError)
    ├── MessageNotFoundError     no stored message with that id (also a LookupError)
    ├── SessionExistsError       create_session with an id already taken (also a ValueError)
    ├── TitleConflictError       another session already has that title (also a ValueError)
    ├── InvalidRecordError       a message, state or record that cannot be stored (also a ValueError)
    ├── InvalidQueryError        a search argument that makes no sense (also a ValueError)
    ├── SessionOwnedElsewhere    another host runs the session now (its lease is held elsewhere)
    ├── DatabaseLockedError      the write lock stayed busy past the busy timeout
    ├── StoreIOError             disk full, I/O error, read-only file system (also an OSError)
    ├── CorruptDatabaseError     the file is damaged or not SQLite at all
    ├── ForeignDatabaseError     a valid SQLite file that belongs to another application
    └── SchemaVersionError       the schema is newer than this code knows

SQLite's and PostgreSQL's own exceptions never leave the store: they are translated once, where
the store calls SQLite, with the original kept as ``__cause__``.
"""

from __future__ import annotations

__all__ = [
    "CorruptDatabaseError",
    "DatabaseLockedError",
    "ForeignDatabaseError",
    "InvalidQueryError",
    "InvalidRecordError",
    "LeaseLostError",
    "MessageNotFoundError",
    "SchemaVersionError",
    "SessionExistsError",
    "SessionNotFoundError",
    "SessionOwnedElsewhere",
    "StoreClosedError",
    "StoreError",
    "StoreIOError",
    "TitleConflictError",
]


class StoreError(Exception):
    """Base of every error the session store raises."""


class StoreClosedError(StoreError):
    """The store was closed, or its writer stopped; the request was not carried out."""


class SessionNotFoundError(StoreError, LookupError):
    """No live session has that id (never created, or deleted)."""


class MessageNotFoundError(StoreError, LookupError):
    """No stored message has that id."""


class SessionExistsError(StoreError, ValueError):
    """A session with that id already exists."""


class TitleConflictError(StoreError, ValueError):
    """Titles are unique when set: another session already uses this one."""


class InvalidRecordError(StoreError, ValueError):
    """A message, state blob or transcript record that cannot be stored (not JSON, no role, ...)."""


class InvalidQueryError(StoreError, ValueError):
    """A search or listing argument out of range or malformed."""


class DatabaseLockedError(StoreError):
    """Another connection held the write lock for longer than the configured busy timeout."""


class StoreIOError(StoreError, OSError):
    """The database file could not be read or written (disk full, I/O error, read-only)."""


class CorruptDatabaseError(StoreError):
    """The file is damaged or is not an SQLite database."""


class ForeignDatabaseError(StoreError):
    """The file is a database of another application (its ``application_id`` is not ours)."""


class SchemaVersionError(StoreError):
    """The database was written by a newer version of hermes-actors."""


class LeaseLostError(StoreError):
    """This host's lease of the session was taken over by another host: its writes are refused."""


class SessionOwnedElsewhere(StoreError):
    """Another host holds the session's lease: it runs there, and may not run here too.

    Attributes:
        address: where that host takes forwarded requests (``HOST:PORT``), if it said.
    """

    def __init__(self, message: str, *, address: str | None = None) -> None:
        super().__init__(message)
        self.address = address
