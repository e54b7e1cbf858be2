"""Configuration section ``store``: the SQLite session database (seed 003 "Session Persistence")."""

from __future__ import annotations

import attrs
from attrs import validators as v

from config.validators import integer, positive_int, positive_number

__all__ = ["StoreConfig"]


@attrs.frozen
class StoreConfig:
    """Section ``store``: how the single writer batches, retries and checkpoints.

    Attributes:
        busy_timeout_seconds: how long a write waits for a lock another connection
            holds (jittered 20-150 ms retries) before failing with DatabaseLockedError;
            also the readers' SQLite busy timeout.
        checkpoint_every: a PASSIVE WAL checkpoint after this many committed write transactions.
        batch_max: the most queued write requests committed in one transaction;
            also the capacity of the writer's mailbox.
        read_connections: reader connections, each used by one worker thread at a time.
        synchronous: SQLite ``PRAGMA synchronous``. ``normal`` (with WAL) keeps every
            commit across a process crash (``kill -9``); ``full`` also across power loss.
    """

    busy_timeout_seconds: float = attrs.field(default=30.0, converter=float, validator=positive_number)
    checkpoint_every: int = attrs.field(default=50, validator=positive_int)
    batch_max: int = attrs.field(default=256, validator=positive_int)
    read_connections: int = attrs.field(default=4, validator=integer(gt=0, le=64))
    synchronous: str = attrs.field(default="normal", validator=v.in_(("normal", "full")))
