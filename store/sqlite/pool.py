"""Reads: a pool of query-only SQLite connections, each used by one worker thread at a time.

The queries themselves are the shared ones of ``store.sql.reads``; multi-statement reads run in
one read transaction so they see one snapshot.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import trio

from store.sqlite.schema import open_reader
from store.sqlite.translate import translate

__all__ = ["ReaderPool"]

T = TypeVar("T")


class ReaderPool:
    """Query-only connections handed to worker threads, at most ``size`` at once.

    Args:
        path: the database file (already opened and migrated by the writer).
        size: the most reads running at once.
        busy_timeout_seconds: SQLite busy timeout of each reader.
    """

    def __init__(self, path: Path, *, size: int, busy_timeout_seconds: float) -> None:
        self._path = path
        self._busy_timeout = busy_timeout_seconds
        self._limiter = trio.CapacityLimiter(size)
        # Invariant: a connection is either in _idle or used by exactly one running read.
        self._idle: list[sqlite3.Connection] = []
        self._closed = False

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(conn, *args)`` in a worker thread on a reader connection.

        Cancellation is prompt: the running query is interrupted and the
        connection handed over to its thread, which closes it when it ends.

        Raises:
            StoreError: translated from any SQLite or OS error.
        """
        async with self._limiter:
            if self._idle:
                conn = self._idle.pop()
            else:
                conn = await trio.to_thread.run_sync(
                    lambda: open_reader(self._path, busy_timeout_seconds=self._busy_timeout)
                )
            read = _Read(conn, fn, args)
            try:
                result = await trio.to_thread.run_sync(read.work, abandon_on_cancel=True)
            except trio.Cancelled:
                if not read.abandon():
                    self._release(read)
                raise
            except BaseException:
                self._release(read)
                raise
            self._release(read)
            return result

    def _release(self, read: _Read) -> None:
        conn = read.conn
        if self._closed or not read.reusable:
            conn.close()
        else:
            self._idle.append(conn)

    async def aclose(self) -> None:
        """Close idle connections (in a thread: the last close of a WAL database checkpoints it).

        Busy connections close when their read ends.
        """
        self._closed = True
        idle, self._idle = self._idle, []
        with trio.CancelScope(shield=True):
            await trio.to_thread.run_sync(_close_all, idle)


def _close_all(connections: list[sqlite3.Connection]) -> None:
    for conn in connections:
        conn.close()


class _Read:
    """One read in a worker thread, and the hand-over of its connection if the caller is cancelled."""

    def __init__(self, conn: sqlite3.Connection, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
        self.conn = conn
        self._fn = fn
        self._args = args
        self._lock = threading.Lock()
        # Invariant: once both are set, the worker thread (not the pool) owns and closes the connection.
        self._finished = False
        self._abandoned = False
        self.reusable = True

    def work(self) -> Any:
        """In the worker thread: run the read, translating lower-layer errors."""
        conn = self.conn
        try:
            return self._fn(conn, *self._args)
        except (sqlite3.Error, OSError) as exc:
            raise translate(exc, "read failed") from exc
        finally:
            try:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
            except sqlite3.Error:
                # Interrupted or failing: a connection in an unknown state is not reused.
                self.reusable = False
            with self._lock:
                self._finished = True
                orphaned = self._abandoned
            if orphaned:
                conn.close()

    def abandon(self) -> bool:
        """The caller was cancelled: interrupt the query. True when the thread now owns the connection."""
        with self._lock:
            if self._finished:
                return False
            self._abandoned = True
        self.conn.interrupt()
        return True
