"""Full-text indexing of new messages, in batches.

FTS5 writes a new segment into an index for every transaction that changes it. Indexed by the
transaction that stores it, one short message costs about 70 us per index per commit; in a batch,
under 10 us. A new message is therefore only queued (``fts_pending``, by a trigger in its own
transaction) and indexed with the others:

- about a second after a write (:data:`INDEX_DELAY_SECONDS`), by the store's :class:`DeferredIndex`;
- before a search reads the indexes, whatever wrote them (another host on the same file included),
  so a search finds every message committed before it;
- at the store's next start, for what was queued when it stopped or crashed.

A message deleted or changed while queued is simply indexed as it is then, or not at all.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Awaitable, Callable

import trio

from store.errors import StoreClosedError, StoreError

__all__ = ["INDEX_DELAY_SECONDS", "MAX_INDEXED_PER_PASS", "DeferredIndex", "has_pending", "index_pending"]

log = logging.getLogger(__name__)

#: How long after a write its messages wait to be indexed (with whatever else is written meanwhile).
INDEX_DELAY_SECONDS = 1.0
#: Messages indexed per transaction: a large backlog is indexed in several, other writes between them.
MAX_INDEXED_PER_PASS = 2000

_INDEXES = ("messages_fts", "messages_tri")


def index_pending(conn: sqlite3.Connection, limit: int = MAX_INDEXED_PER_PASS) -> bool:
    """A write op: index the first ``limit`` queued messages in both indexes; whether more are queued."""
    last = conn.execute("SELECT max(id) FROM (SELECT id FROM fts_pending ORDER BY id LIMIT ?)", (limit,)).fetchone()[0]
    if last is None:
        return False
    for index in _INDEXES:
        conn.execute(
            f"INSERT INTO {index}(rowid, body, calls) SELECT t.id, t.body, t.calls"
            " FROM fts_pending AS p JOIN message_text AS t ON t.id = p.id WHERE p.id <= ? ORDER BY p.id",
            (last,),
        )
    conn.execute("DELETE FROM fts_pending WHERE id <= ?", (last,))
    return has_pending(conn)


def has_pending(conn: sqlite3.Connection) -> bool:
    """A read: whether any message waits to be indexed."""
    return conn.execute("SELECT EXISTS (SELECT 1 FROM fts_pending)").fetchone()[0] == 1


class DeferredIndex:
    """Runs :func:`index_pending` a while after writes, and at once before a search.

    Args:
        submit: queues a write op with the store's single writer; returns once it is committed.
        read: runs a read on one of the store's reader connections.
        delay: seconds between a write and the pass that indexes it (:data:`INDEX_DELAY_SECONDS`
            when None).
    """

    def __init__(
        self,
        submit: Callable[[Callable[[sqlite3.Connection], bool]], Awaitable[bool]],
        read: Callable[[Callable[[sqlite3.Connection], bool]], Awaitable[bool]],
        delay: float | None = None,
    ) -> None:
        self._submit = submit
        self._read = read
        self._delay = INDEX_DELAY_SECONDS if delay is None else delay
        # Set from the start: what an earlier run left queued is indexed a delay after opening.
        self._written = trio.Event()
        self._written.set()

    def written(self) -> None:
        """A write was submitted: index it (and whatever follows it) after the delay."""
        self._written.set()

    async def catch_up(self) -> None:
        """Index everything queued now (before a search)."""
        if await self._read(has_pending):
            await self._index_all()

    async def run(self) -> None:
        """Index queued messages a delay after each write, until cancelled or the store closes."""
        while True:
            await self._written.wait()
            await trio.sleep(self._delay)
            # Writes from here on wake the next pass; this one indexes what they queue too, if in time.
            self._written = trio.Event()
            try:
                await self._index_all()
            except StoreClosedError:
                return
            except StoreError as exc:
                # The messages stay queued: the next write's pass or a search tries again.
                log.warning("store: indexing new messages for search failed: %s", exc)

    async def _index_all(self) -> None:
        while await self._submit(index_pending):
            pass
