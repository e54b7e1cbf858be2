"""Configuration section ``store``: the session database (docs/DECISIONS.md#d-session-store): SQLite by
default, PostgreSQL when ``url`` names one."""

from __future__ import annotations

from typing import Any

import attrs
from attrs import validators as v

from config.validators import integer, positive_int, positive_number

__all__ = ["POSTGRES_SCHEMES", "StoreConfig"]

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def _database_url(instance: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and not (isinstance(value, str) and value.startswith(POSTGRES_SCHEMES)):
        # The URL may hold a password: the message names only what kind of value it was.
        kind = value.partition("://")[0] + "://" if isinstance(value, str) and "://" in value else type(value).__name__
        raise ValueError(f"store.url must be a postgresql:// URL (or absent for SQLite), got a {kind} value")


@attrs.frozen
class StoreConfig:
    """Section ``store``: which database holds the sessions, and how SQLite's single writer batches,
    retries and checkpoints.

    Attributes:
        busy_timeout_seconds: how long a write waits for a lock another connection
            holds (jittered 20-150 ms retries) before failing with DatabaseLockedError;
            also the readers' SQLite busy timeout.
        checkpoint_every: a PASSIVE WAL checkpoint after this many committed write transactions.
        batch_max: the most queued write requests committed in one transaction;
            also the capacity of the writer's mailbox.
        read_connections: reader connections, each used by one worker thread at a time.
        url: a ``postgresql://`` URL: the sessions live in that PostgreSQL database, shared by every
            host that names it, instead of ``state.db``. Absent: SQLite.
        pool_size: PostgreSQL connections of this process (each used by one worker thread at a time).
        lease_check_seconds: how often a PostgreSQL host checks the connection that holds its
            session leases (a broken one has lost them all: its sessions stop here).
        synchronous: SQLite ``PRAGMA synchronous``. ``normal`` (with WAL) keeps every
            commit across a process crash (``kill -9``); ``full`` also across power loss.
    """

    busy_timeout_seconds: float = attrs.field(default=30.0, converter=float, validator=positive_number)
    checkpoint_every: int = attrs.field(default=50, validator=positive_int)
    batch_max: int = attrs.field(default=256, validator=positive_int)
    read_connections: int = attrs.field(default=4, validator=integer(gt=0, le=64))
    synchronous: str = attrs.field(default="normal", validator=v.in_(("normal", "full")))
    url: str | None = attrs.field(default=None, validator=_database_url)
    pool_size: int = attrs.field(default=8, validator=integer(gt=0, le=256))
    lease_check_seconds: float = attrs.field(default=5.0, converter=float, validator=positive_number)
