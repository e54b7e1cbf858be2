"""The single writer: one task, one connection, every write batched into a transaction.

Write requests queue in a bounded memory channel (callers feel backpressure
when it is full). The writer takes the first request and everything else
already queued (up to ``batch_max``), runs them in one ``BEGIN IMMEDIATE``
transaction on its connection in a worker thread (a limiter of one: the
connection is never used by two threads at once), and answers each caller
only after ``COMMIT``. Each request runs under a savepoint, so one bad request
fails alone while its batch-mates commit. When another connection holds the
lock, ``BEGIN IMMEDIATE`` is retried after a jittered 20-150 ms sleep (which
avoids the convoy SQLite's own busy handler causes) until the busy timeout.
A PASSIVE WAL checkpoint runs after every ``checkpoint_every`` write
transactions (a batch is one write: counting requests would checkpoint on
every busy batch and halve throughput).
"""

from __future__ import annotations

import logging
import random
import sqlite3
from collections.abc import Callable
from typing import Any

import attrs
import outcome
import trio

from store.errors import DatabaseLockedError, StoreClosedError, StoreError
from store.sqlite.translate import is_busy, translate

__all__ = ["WriteOp", "Writer", "WriterStatistics"]

log = logging.getLogger(__name__)

WriteOp = Callable[[sqlite3.Connection], Any]
"""A unit of work run inside the writer's transaction; it may raise a StoreError to fail alone."""

_RETRY_MIN_SECONDS = 0.020
_RETRY_MAX_SECONDS = 0.150


@attrs.frozen
class WriterStatistics:
    """A snapshot of the writer, for inspection and tests.

    Attributes:
        requests: write requests answered (committed or failed).
        transactions: transactions committed.
        largest_batch: the most requests one transaction carried.
        busy_retries: ``BEGIN IMMEDIATE`` attempts that found the database locked.
        checkpoints: WAL checkpoints run.
        queued: requests waiting in the mailbox now.
    """

    requests: int
    transactions: int
    largest_batch: int
    busy_retries: int
    checkpoints: int
    queued: int


class _Busy(Exception):
    """BEGIN IMMEDIATE found the write lock taken (internal: triggers a retry)."""


class _Request:
    """One write and its answer slot: ``result`` is set only after the commit (or the failure)."""

    __slots__ = ("done", "op", "result")

    def __init__(self, op: WriteOp) -> None:
        self.op = op
        self.result: outcome.Outcome | None = None
        self.done = trio.Event()

    def finish(self, result: outcome.Outcome) -> None:
        """Answer the waiter; a result already set by the commit wins over ``result``."""
        if self.result is None:
            self.result = result
        self.done.set()


class Writer:
    """Owner of the write connection; see the module docstring.

    Args:
        connect: opens the write connection (blocking; run in the writer's thread).
        busy_timeout_seconds: how long a batch keeps retrying a locked database.
        checkpoint_every: write transactions between PASSIVE checkpoints.
        batch_max: most requests per transaction, and the mailbox capacity.
    """

    def __init__(
        self,
        connect: Callable[[], sqlite3.Connection],
        *,
        busy_timeout_seconds: float,
        checkpoint_every: int,
        batch_max: int,
    ) -> None:
        self._connect = connect
        self._busy_timeout = busy_timeout_seconds
        self._checkpoint_every = checkpoint_every
        self._batch_max = batch_max
        self._send, self._receive = trio.open_memory_channel[_Request](batch_max)
        self._limiter = trio.CapacityLimiter(1)
        self._conn: sqlite3.Connection | None = None
        # Invariant: only touched by the thread holding self._limiter, or by Trio while no thread runs.
        self._since_checkpoint = 0
        self._requests = 0
        self._transactions = 0
        self._largest_batch = 0
        self._busy_retries = 0
        self._checkpoints = 0

    def statistics(self) -> WriterStatistics:
        """Counters of what the writer has done so far."""
        return WriterStatistics(
            requests=self._requests,
            transactions=self._transactions,
            largest_batch=self._largest_batch,
            busy_retries=self._busy_retries,
            checkpoints=self._checkpoints,
            queued=self._send.statistics().current_buffer_used,
        )

    async def submit(self, op: WriteOp) -> Any:
        """Queue ``op`` and return its result once its transaction committed.

        If the caller is cancelled after queueing, the write may still commit.

        Raises:
            StoreClosedError: the writer is not running.
            StoreError: what ``op`` raised, or what failed the whole batch.
        """
        request = _Request(op)
        try:
            await self._send.send(request)
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            raise StoreClosedError("the store is closed") from None
        await request.done.wait()
        assert request.result is not None
        return request.result.unwrap()

    def close(self) -> None:
        """Take no more requests; the writer commits what is queued, then ``run`` returns."""
        self._send.close()

    async def connect(self) -> None:
        """Open the write connection now (``run`` does it when not done yet).

        Raises:
            StoreError: the database could not be opened.
        """
        if self._conn is None:
            self._conn = await trio.to_thread.run_sync(self._connect, limiter=self._limiter)

    def discard(self) -> None:
        """Close the connection if ``run`` never took charge of it (after a failed start)."""
        self._fail_queued()
        self._close_connection()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Open the connection, then serve requests until ``close()`` (or cancellation).

        Raises:
            StoreError: the database could not be opened.
        """
        await self.connect()
        try:
            task_status.started()
            async for first in self._receive:
                batch = [first]
                while len(batch) < self._batch_max:
                    try:
                        batch.append(self._receive.receive_nowait())
                    except (trio.WouldBlock, trio.EndOfChannel):
                        break
                await self._commit(batch)
        finally:
            self._fail_queued()
            with trio.CancelScope(shield=True):
                await trio.to_thread.run_sync(self._close_connection, limiter=self._limiter)

    def _fail_queued(self) -> None:
        self._send.close()
        while True:
            try:
                request = self._receive.receive_nowait()
            except (trio.WouldBlock, trio.EndOfChannel, trio.ClosedResourceError):
                break
            request.finish(outcome.Error(StoreClosedError("the store closed before this write ran")))
        self._receive.close()

    def _close_connection(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    async def _commit(self, batch: list[_Request]) -> None:
        deadline = trio.current_time() + self._busy_timeout
        try:
            while True:
                try:
                    await trio.to_thread.run_sync(self._run_batch, batch, limiter=self._limiter)
                    return
                except _Busy:
                    self._busy_retries += 1
                    if trio.current_time() >= deadline:
                        message = f"the database stayed locked by another connection for {self._busy_timeout:g} s"
                        log.error("store: write failed: %s", message)
                        for request in batch:
                            request.finish(outcome.Error(DatabaseLockedError(message)))
                        return
                    await trio.sleep(random.uniform(_RETRY_MIN_SECONDS, _RETRY_MAX_SECONDS))
                except StoreError as error:
                    log.error("store: write transaction failed: %s", error)
                    for request in batch:
                        request.finish(outcome.Error(_copy(error)))
                    return
        finally:
            for request in batch:
                request.finish(outcome.Error(StoreClosedError("the store closed while this write ran")))
            self._requests += len(batch)

    def _run_batch(self, batch: list[_Request]) -> None:
        """In the writer thread: one transaction for the whole batch; outcomes set after COMMIT."""
        conn = self._conn
        assert conn is not None
        try:
            # SQLite's own busy handler would sleep inside the lock convoy; we retry with jitter instead.
            conn.execute("PRAGMA busy_timeout = 0")
            try:
                conn.execute("BEGIN IMMEDIATE")
            finally:
                conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout * 1000)}")
        except sqlite3.Error as exc:
            if is_busy(exc):
                raise _Busy from exc
            raise translate(exc, "cannot start a write transaction") from exc
        results: list[outcome.Outcome] = []
        try:
            for request in batch:
                conn.execute("SAVEPOINT request")
                try:
                    value = request.op(conn)
                except Exception as exc:
                    if isinstance(exc, sqlite3.Error) and not isinstance(exc, sqlite3.IntegrityError):
                        raise  # the connection or the file is in trouble: fail the whole batch
                    conn.execute("ROLLBACK TO request")
                    conn.execute("RELEASE request")
                    results.append(outcome.Error(_request_error(exc)))
                else:
                    conn.execute("RELEASE request")
                    results.append(outcome.Value(value))
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise translate(exc, "write transaction rolled back") from exc
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        self._transactions += 1
        self._largest_batch = max(self._largest_batch, len(batch))
        for request, result in zip(batch, results, strict=True):
            request.result = result
        self._since_checkpoint += 1
        if self._since_checkpoint >= self._checkpoint_every:
            self._since_checkpoint = 0
            try:
                conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
                self._checkpoints += 1
            except sqlite3.Error as exc:
                # The writes are committed; a failed checkpoint only delays WAL truncation.
                log.warning("store: WAL checkpoint failed: %s", exc)


def _request_error(exc: Exception) -> StoreError:
    """The error one failed request gets; its batch-mates still commit."""
    if isinstance(exc, StoreError | sqlite3.Error):
        error = translate(exc)
    else:
        # A bug in a write op must not kill the writer: the caller gets it, the log keeps the traceback.
        log.error("store: write request crashed", exc_info=exc)
        error = StoreError(f"internal error in a store write: {exc!r}")
    if error is not exc:
        error.__cause__ = exc
    return error


def _copy(error: StoreError) -> StoreError:
    """A fresh instance for each waiter: one exception object raised in several tasks tangles their tracebacks."""
    copy = type(error)(*error.args)
    copy.__cause__ = error.__cause__
    return copy
