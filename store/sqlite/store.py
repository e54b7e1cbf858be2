"""``SqliteSessionStore``: the daemon's ``SessionStore`` on one SQLite file.

Writes go to the single writer (``store.sql.writer``), reads to a pool of
reader connections in worker threads; the protocol's methods are the shared ones
of ``store.sql.store``. New messages are indexed for search in batches (``store.sqlite.indexing``).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import trio

from config.store import StoreConfig
from store.errors import StoreClosedError
from store.leases import LocalLeases, SessionLeases
from store.query import SearchRequest
from store.records import SessionMatches
from store.sql.store import SqlSessionStore
from store.sqlite.indexing import DeferredIndex
from store.sqlite.pool import ReaderPool
from store.sqlite.schema import open_writer
from store.sqlite.search import search
from store.sql.writer import Writer, WriterStatistics
from store.sqlite.writer import SqliteWriterDialect

__all__ = ["DB_FILENAME", "SqliteSessionStore"]

T = TypeVar("T")

DB_FILENAME = "state.db"


class _Lifecycle(enum.Enum):
    NEW = "new"  # constructed; run() not started
    RUNNING = "running"  # run() is serving
    CLOSED = "closed"  # close() called or run() ended; never reopened


class SqliteSessionStore(SqlSessionStore):
    """The session store on ``path`` (normally ``HERMES_ACTORS_HOME/state.db``).

    Use ``async with SqliteSessionStore.open(path) as store``, or, under a
    supervisor, ``await nursery.start(store.run)`` and ``store.close()``.

    Args:
        path: the database file; created (0600, in a 0700 directory) when missing.
        config: the ``store`` configuration section.
        leases: who may run which session; by default every lease is granted (one process per
            database file). A daemon with several host processes passes ``FileLeases``.
    """

    _search = staticmethod(search)

    def __init__(self, path: Path, config: StoreConfig | None = None, leases: SessionLeases | None = None) -> None:
        self.path = Path(path)
        self.config = config or StoreConfig()
        self.leases = leases or LocalLeases()
        self._state = _Lifecycle.NEW
        self._shared_stored = set()
        self._writer = Writer(
            partial(
                open_writer,
                self.path,
                busy_timeout_seconds=self.config.busy_timeout_seconds,
                synchronous=self.config.synchronous,
            ),
            SqliteWriterDialect(self.config.busy_timeout_seconds),
            busy_timeout_seconds=self.config.busy_timeout_seconds,
            checkpoint_every=self.config.checkpoint_every,
            batch_max=self.config.batch_max,
        )
        self._readers = ReaderPool(
            self.path, size=self.config.read_connections, busy_timeout_seconds=self.config.busy_timeout_seconds
        )
        self._index = DeferredIndex(self._writer.submit, self._read)

    @classmethod
    def open(cls, path: Path, config: StoreConfig | None = None) -> AbstractAsyncContextManager[SqliteSessionStore]:
        """Open the store for the duration of the block (``async with``); on exit queued writes commit,
        then it closes.

        Raises:
            ForeignDatabaseError, CorruptDatabaseError, SchemaVersionError, StoreIOError: the file is unusable.
        """
        return cls(path, config)._running()

    async def _prepare(self) -> None:
        await self._writer.connect()

    async def _discard(self) -> None:
        self._writer.discard()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Open the database and serve writes until ``close()``; ``task_status.started()`` once open.

        Raises:
            StoreClosedError: run twice. Other StoreErrors: the file is unusable.
        """
        if self._state is not _Lifecycle.NEW:
            raise StoreClosedError("a store runs once; open a new one")
        self._state = _Lifecycle.RUNNING
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._index.run)
                try:
                    await self._writer.run(task_status=task_status)
                finally:
                    nursery.cancel_scope.cancel()
        finally:
            self._state = _Lifecycle.CLOSED
            await self._readers.aclose()

    def close(self) -> None:
        """Stop taking writes; queued ones still commit before ``run`` returns."""
        self._writer.close()

    def statistics(self) -> WriterStatistics:
        """The writer's counters (transactions, batches, busy retries, checkpoints, queue depth)."""
        return self._writer.statistics()

    async def _read(self, fn: Callable[..., T], *args: Any) -> T:
        if self._state is not _Lifecycle.RUNNING:
            raise StoreClosedError("the store is not open")
        return await self._readers.run(fn, *args)

    async def _submit(self, op: Callable[[Any], T]) -> T:
        self._index.written()
        return await self._writer.submit(op)

    async def _run_search(self, request: SearchRequest) -> list[SessionMatches]:
        """The search, after the messages still queued for indexing are indexed."""
        await self._index.catch_up()
        return await super()._run_search(request)

