"""``PostgresSessionStore``: the ``SessionStore`` on PostgreSQL, for session hosts sharing one database.

psycopg 3's async API runs on asyncio only, so the store uses its blocking API from Trio worker
threads. Writes go through the single writer shared with SQLite (``store.sql.writer``): one
connection, the writes queued meanwhile committed as one transaction, each under a savepoint, so a
host with many sessions commits in batches rather than once per message. Reads take connections from
a ``psycopg_pool.ConnectionPool`` (autocommit; each multi-statement read one REPEATABLE READ
transaction), bounded by a Trio limiter as large as the pool so no thread waits inside it. The
protocol's methods are the shared ones of ``store.sql.store``; the SQL is ``store.sql``'s, run through
``store.postgres.connection``.

A read whose caller is cancelled is abandoned at once and its query cancelled at the server.
"""

from __future__ import annotations

import enum
from functools import partial
import os
import socket
import threading
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import attrs
import psycopg
import psycopg_pool
import trio

from config.store import StoreConfig
from store.errors import StoreClosedError, StoreError
from store.postgres.fencing import fenced
from store.postgres.connection import PgConnection, PgWriterDialect, register_text_escaping, translate
from store.postgres.leases import PostgresLeases
from store.postgres.notices import listen_for_releases
from store.postgres.schema import SCHEMA, migrate
from store.postgres.search import search
from store.sql.store import SqlSessionStore
from store.sql.writer import Writer

__all__ = ["PostgresSessionStore", "PostgresStatistics", "redacted_url"]

T = TypeVar("T")

_OPTIONS = f"-c search_path={SCHEMA},public"


def redacted_url(url: str) -> str:
    """``url`` without its password, for logs and ``inspect``."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username or ''}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


@attrs.frozen
class PostgresStatistics:
    """The writer's and the read pool's counters, for ``inspect store``."""

    requests: int
    transactions: int
    largest_batch: int
    queued: int
    pool_size: int
    pool_available: int
    requests_waiting: int
    connections_num: int
    connections_errors: int


class _Lifecycle(enum.Enum):
    NEW = "new"
    OPEN = "open"
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
    leases: PostgresLeases

    def __init__(self, url: str, config: StoreConfig | None = None) -> None:
        self.url = url
        #: Where the store is, as ``inspect`` shows it (the URL without its password).
        self.path = redacted_url(url)
        self.config = config or StoreConfig()
        self._state = _Lifecycle.NEW
        self._shared_stored = set()
        self._closed = trio.Event()
        self._limiter = trio.CapacityLimiter(self.config.pool_size)
        self.leases = PostgresLeases(self._lease_connection, f"{socket.gethostname()}:{os.getpid()}")
        self._writer = Writer(
            self._write_connection,
            PgWriterDialect(),
            busy_timeout_seconds=self.config.busy_timeout_seconds,
            checkpoint_every=self.config.checkpoint_every,
            batch_max=self.config.batch_max,
        )
        self._pool = psycopg_pool.ConnectionPool(
            url,
            min_size=1,
            max_size=self.config.pool_size,
            open=False,
            configure=_configure,
            name="hermes-store",
            kwargs={"autocommit": True, "application_name": "hermes-actors", "options": _OPTIONS},
        )

    @classmethod
    def open(cls, url: str, config: StoreConfig | None = None) -> AbstractAsyncContextManager[PostgresSessionStore]:
        """Open the store for the duration of the block (``async with``: connect, migrate, serve);
        on exit queued writes commit, then it closes.

        Raises:
            StoreIOError: the database cannot be reached. ForeignDatabaseError, SchemaVersionError.
        """
        return cls(url, config)._running()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Connect and migrate, ``task_status.started()``, then serve until ``close()``, checking the
        lease connection every ``lease_check_seconds``.

        Raises:
            StoreClosedError: run twice. Other StoreErrors: the database is unusable.
        """
        if self._state is _Lifecycle.CLOSED:
            raise StoreClosedError("a store runs once; open a new one")
        await self._prepare()
        try:
            async with trio.open_nursery() as nursery:
                await nursery.start(self._writer.run)
                # Its own scope: stopping it must not cancel the writer's last commits.
                listening = trio.CancelScope()
                # Open once it listens: a release told after that is heard (another host's, say).
                await nursery.start(self._listen, listening)
                task_status.started()
                while not self._closed.is_set():
                    with trio.move_on_after(self.config.lease_check_seconds):
                        await self._closed.wait()
                    await self.leases.check()
                listening.cancel()
        finally:
            with trio.CancelScope(shield=True):
                await self._discard()

    async def _listen(self, scope: trio.CancelScope, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        with scope:
            await listen_for_releases(self._notice_connection, self.leases.released, task_status=task_status)

    def close(self) -> None:
        """Stop taking writes; queued ones still commit before ``run`` returns."""
        self._closed.set()
        self._writer.close()

    def statistics(self) -> PostgresStatistics:
        """The writer's and the read pool's counters."""
        writer = self._writer.statistics()
        pool = self._pool.get_stats()
        return PostgresStatistics(
            requests=writer.requests, transactions=writer.transactions, largest_batch=writer.largest_batch,
            queued=writer.queued, pool_size=pool.get("pool_size", 0), pool_available=pool.get("pool_available", 0),
            requests_waiting=pool.get("requests_waiting", 0), connections_num=pool.get("connections_num", 0),
            connections_errors=pool.get("connections_errors", 0),
        )

    async def _prepare(self) -> None:
        if self._state is not _Lifecycle.NEW:
            return
        self._state = _Lifecycle.OPEN
        try:
            await trio.to_thread.run_sync(self._open_and_migrate)
            await self._writer.connect()
        except BaseException:
            with trio.CancelScope(shield=True):
                await self._discard()
            raise

    async def _discard(self) -> None:
        if self._state is _Lifecycle.CLOSED:
            return
        self._state = _Lifecycle.CLOSED
        self._writer.discard()
        await self.leases.close()
        # Reads under way each hold a token of the limiter: taking them all waits for those reads.
        for _ in range(int(self._limiter.total_tokens)):
            await self._limiter.acquire_on_behalf_of(object())
        await trio.to_thread.run_sync(self._pool.close)

    def _connection(self, application: str, **extra: Any) -> psycopg.Connection[Any]:
        try:
            conn = psycopg.connect(self.url, autocommit=True, application_name=application, **extra)
        except (psycopg.Error, OSError) as exc:
            raise translate(OSError(f"cannot connect to {self.path}: {exc}")) from exc
        register_text_escaping(conn)
        return conn

    def _write_connection(self) -> PgConnection:
        return PgConnection(self._connection("hermes-actors writer", options=_OPTIONS))

    def _notice_connection(self) -> psycopg.Connection[Any]:
        return self._connection("hermes-actors notices", keepalives=1, keepalives_idle=10, keepalives_interval=5, keepalives_count=3)

    def _lease_connection(self) -> psycopg.Connection[Any]:
        # TCP keepalives: a database that vanished is noticed in ~25 s even with no query under way.
        return self._connection(
            "hermes-actors leases", options=_OPTIONS,
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

    async def _submit(self, op: Callable[[Any], T]) -> T:
        result: T = await self._writer.submit(op)
        return result

    async def _session_write(self, op: Callable[..., Any], session_id: str, **arguments: Any) -> Any:
        epoch = self.leases.epoch(session_id)
        if epoch is None:
            # Not a session this host runs (a tool writing to the store directly, a test): nothing to fence.
            return await self._write(op, session_id, **arguments)
        return await self._write(partial(fenced, op, epoch=epoch), session_id, **arguments)

    async def _read(self, fn: Callable[..., T], *args: Any) -> T:
        if self._state is not _Lifecycle.OPEN:
            raise StoreClosedError("the store is not open")
        read = _Read(fn, args)
        try:
            return await trio.to_thread.run_sync(
                self._read_in_thread, read, limiter=self._limiter, abandon_on_cancel=True
            )
        except trio.Cancelled:
            # The caller is gone: the server stops the query (a cancel request is a network round
            # trip, so it is sent from a thread, not from the event loop).
            trio.lowlevel.start_thread_soon(read.cancel, lambda _: None)
            raise

    def _read_in_thread(self, read: _Read) -> Any:
        try:
            with self._pool.connection(timeout=self.config.busy_timeout_seconds) as conn:
                return read.run(PgConnection(conn))
        except StoreError:
            raise
        except psycopg_pool.PoolTimeout as exc:
            raise translate(OSError(f"no database connection within {self.config.busy_timeout_seconds:g}s")) from exc
        except (psycopg.Error, OSError) as exc:
            raise translate(exc) from exc


class _Read:
    """One read in a worker thread, and its cancellation at the server if its caller goes away."""

    def __init__(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
        self._fn = fn
        self._args = args
        self._lock = threading.Lock()
        # Invariant: the connection is set while the read runs on it; cancelled once cancel() ran.
        self._conn: PgConnection | None = None
        self._cancelled = False

    def run(self, conn: PgConnection) -> Any:
        """In the worker thread: the read, unless it was cancelled before it began."""
        with self._lock:
            if self._cancelled:
                raise StoreClosedError("the read was cancelled")
            self._conn = conn
        try:
            return self._fn(conn, *self._args)
        finally:
            with self._lock:
                self._conn = None

    def cancel(self) -> None:
        """Ask the server to stop the running query (from any thread)."""
        with self._lock:
            self._cancelled = True
            conn = self._conn
        if conn is not None:
            conn.raw.cancel_safe(timeout=5.0)
