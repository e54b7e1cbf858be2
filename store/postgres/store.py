"""``PostgresSessionStore``: the ``SessionStore`` on PostgreSQL, for session hosts sharing one database.

psycopg 3's async API runs on asyncio only, so the store uses its blocking API from Trio worker
threads: a ``psycopg_pool.ConnectionPool`` of autocommit connections, and a Trio capacity limiter
as large as the pool, so no thread ever waits inside the pool. Each write is one transaction of its
own (PostgreSQL serialises concurrent writers itself; there is no single writer as on SQLite); each
multi-statement read is one REPEATABLE READ transaction. The protocol's methods are the shared ones
of ``store.sql.store``; the SQL is ``store.sql``'s, run through ``store.postgres.connection``.

A call is not abandoned when its caller is cancelled: the thread finishes its transaction (a write
commits or not as a whole) and the result is dropped.
"""

from __future__ import annotations

import enum
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import attrs
import psycopg
import psycopg_pool
import trio

from config.store import StoreConfig
from store.errors import StoreClosedError, StoreError
from store.postgres.connection import PgConnection, register_text_escaping, translate
from store.postgres.leases import PostgresLeases
from store.postgres.schema import SCHEMA, migrate
from store.postgres.search import search
from store.sql.store import SqlSessionStore

__all__ = ["PoolStatistics", "PostgresSessionStore", "redacted_url"]

T = TypeVar("T")


def redacted_url(url: str) -> str:
    """``url`` without its password, for logs and ``inspect``."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username or ''}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


@attrs.frozen
class PoolStatistics:
    """The connection pool's counters, for ``inspect store``."""

    pool_size: int
    pool_available: int
    requests_waiting: int
    requests_num: int
    connections_num: int
    connections_errors: int


class _Lifecycle(enum.Enum):
    NEW = "new"
    RUNNING = "running"
    CLOSED = "closed"


def _configure(conn: psycopg.Connection[Any]) -> None:
    register_text_escaping(conn)


class PostgresSessionStore(SqlSessionStore):
    """The session store in the PostgreSQL database at ``url`` (``store.url`` in ``config.yaml``).

    Use ``async with PostgresSessionStore.open(url) as store``, or, under a supervisor,
    ``await nursery.start(store.run)`` and ``store.close()``, as with ``SqliteSessionStore``.
    ``leases`` are this host's session leases (``store.postgres.leases``); ``run`` checks their
    connection every ``lease_check_seconds``.

    Args:
        url: a ``postgresql://`` URL (libpq's forms: a host, or ``?host=/socket/dir``).
        config: the ``store`` configuration section (``pool_size``).
    """

    _search = staticmethod(search)

    def __init__(self, url: str, config: StoreConfig | None = None) -> None:
        self.url = url
        self.config = config or StoreConfig()
        self._state = _Lifecycle.NEW
        self._closed = trio.Event()
        self._limiter = trio.CapacityLimiter(self.config.pool_size)
        self.leases = PostgresLeases(self._lease_connection)
        self._pool = psycopg_pool.ConnectionPool(
            url,
            min_size=1,
            max_size=self.config.pool_size,
            open=False,
            configure=_configure,
            name="hermes-store",
            kwargs={
                "autocommit": True,
                "application_name": "hermes-actors",
                "options": f"-c search_path={SCHEMA},public",
            },
        )

    @property
    def path(self) -> str:
        """Where the store is, as ``inspect`` shows it (the URL without its password)."""
        return redacted_url(self.url)

    @classmethod
    @asynccontextmanager
    async def open(cls, url: str, config: StoreConfig | None = None) -> AsyncIterator[PostgresSessionStore]:
        """Open the store for the duration of the block (connect, migrate); close it on exit.

        Raises:
            StoreIOError: the database cannot be reached. ForeignDatabaseError, SchemaVersionError.
        """
        store = cls(url, config)
        await store._connect()
        try:
            yield store
        finally:
            await store._disconnect()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Connect and migrate, ``task_status.started()``, then serve until ``close()``.

        Raises:
            StoreClosedError: run twice. Other StoreErrors: the database is unusable.
        """
        if self._state is not _Lifecycle.NEW:
            raise StoreClosedError("a store runs once; open a new one")
        await self._connect()
        try:
            task_status.started()
            while not self._closed.is_set():
                with trio.move_on_after(self.config.lease_check_seconds):
                    await self._closed.wait()
                await self.leases.check()
        finally:
            with trio.CancelScope(shield=True):
                await self._disconnect()

    def close(self) -> None:
        """Stop taking calls; those under way finish before ``run`` returns."""
        self._closed.set()

    def statistics(self) -> PoolStatistics:
        """The connection pool's counters."""
        stats = self._pool.get_stats()
        return PoolStatistics(**{field.name: stats.get(field.name, 0) for field in attrs.fields(PoolStatistics)})

    async def _connect(self) -> None:
        self._state = _Lifecycle.RUNNING
        try:
            await trio.to_thread.run_sync(self._open_and_migrate)
        except BaseException:
            self._state = _Lifecycle.CLOSED
            await trio.to_thread.run_sync(self._pool.close)
            raise

    def _lease_connection(self) -> psycopg.Connection[Any]:
        # TCP keepalives: a database that vanished is noticed in ~25 s even with no query under way.
        return psycopg.connect(
            self.url, autocommit=True, application_name="hermes-actors leases",
            keepalives=1, keepalives_idle=10, keepalives_interval=5, keepalives_count=3,
        )

    def _open_and_migrate(self) -> None:
        try:
            self._pool.open(wait=True, timeout=self.config.busy_timeout_seconds)
            with self._pool.connection() as conn:
                migrate(conn)
        except psycopg_pool.PoolTimeout as exc:
            raise translate(OSError(f"cannot connect to {self.path}: {exc}")) from exc
        except (psycopg.Error, OSError) as exc:
            raise translate(exc, f"cannot open {self.path}") from exc

    async def _disconnect(self) -> None:
        self._state = _Lifecycle.CLOSED
        await self.leases.close()
        # Calls under way each hold a token of the limiter: taking them all waits for those calls.
        for _ in range(int(self._limiter.total_tokens)):
            await self._limiter.acquire_on_behalf_of(object())
        await trio.to_thread.run_sync(self._pool.close)

    async def _call(self, fn: Callable[[PgConnection], T], transaction: bool) -> T:
        if self._state is not _Lifecycle.RUNNING or self._closed.is_set():
            raise StoreClosedError("the store is not open")
        return await trio.to_thread.run_sync(self._in_thread, fn, transaction, limiter=self._limiter)

    def _in_thread(self, fn: Callable[[PgConnection], T], transaction: bool) -> T:
        try:
            with self._pool.connection(timeout=self.config.busy_timeout_seconds) as conn:
                if not transaction:
                    return fn(PgConnection(conn))
                with conn.transaction():
                    return fn(PgConnection(conn))
        except StoreError:
            raise
        except psycopg_pool.PoolTimeout as exc:
            raise translate(OSError(f"no database connection within {self.config.busy_timeout_seconds:g}s")) from exc
        except (psycopg.Error, OSError) as exc:
            raise translate(exc) from exc

    async def _submit(self, op: Callable[[Any], T]) -> T:
        return await self._call(op, transaction=True)

    async def _read(self, fn: Callable[..., T], *args: Any) -> T:
        return await self._call(lambda conn: fn(conn, *args), transaction=False)
