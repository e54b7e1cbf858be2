"""The single writer: one task, one connection, every write batched into a transaction.

Write requests queue in a bounded memory channel (callers feel backpressure
when it is full). The writer takes the first request and everything else
already queued (up to ``batch_max``), runs them in one transaction on its
connection in a worker thread (a limiter of one: the connection is never used
by two threads at once), and answers each caller only after ``COMMIT``. Each
request runs under a savepoint, so one bad request fails alone while its
batch-mates commit. A batch is one commit however many sessions wrote: with many
writers, that is what keeps the commit rate (and the disk's flushes) down.

What differs by database is the ``WriterDialect``: how a transaction begins (SQLite's
``BEGIN IMMEDIATE`` may find the write lock taken: it is retried after a jittered
20-150 ms sleep, which avoids the convoy SQLite's own busy handler causes, until the
busy timeout), which errors fail the whole batch, how errors are translated, whether
a connection must be replaced, and what follows every ``checkpoint_every`` commits
(SQLite: a PASSIVE WAL checkpoint; a batch is one write: counting requests would
checkpoint on every busy batch and halve throughput).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from typing import Any, Protocol

import attrs
import outcome
import trio

from store.errors import DatabaseLockedError, StoreClosedError, StoreError
from store.sql.connection import Connection

__all__ = ["WriteBusy", "WriteOp", "Writer", "WriterDialect", "WriterStatistics"]

log = logging.getLogger(__name__)

WriteOp = Callable[[Any], Any]
"""A unit of work run inside the writer's transaction on its connection; it may raise a StoreError to fail alone."""


class WriteBusy(Exception):
    """Raised by ``WriterDialect.begin``: another connection holds the write lock (the batch is retried)."""


class WriterDialect(Protocol):
    """What the writer needs to know of its database.

    Attributes:
        errors: the database driver's exception classes.
    """

    errors: tuple[type[Exception], ...]

    def begin(self, conn: Any) -> None:
        """Start the batch's transaction.

        Raises:
            WriteBusy: the write lock is taken; another error: the batch fails.
        """
        ...

    def fails_batch(self, exc: Exception) -> bool:
        """Whether a database error (one of ``errors``) a request raised means the connection is in
        trouble (the whole batch fails), rather than the request being refused (it fails alone)."""
        ...

    def translate(self, exc: BaseException, context: str = "") -> StoreError:
        """The store error for a database (or OS) error."""
        ...

    def in_transaction(self, conn: Any) -> bool:
        """Whether ``conn`` has a transaction open (to roll back after a failure)."""
        ...

    def usable(self, conn: Any) -> bool:
        """Whether ``conn`` can still be used; a broken one is replaced before the next batch."""
        ...

    def checkpoint(self, conn: Any) -> bool:
        """Run after every ``checkpoint_every`` commits; whether anything was done (counted)."""
        ...

    def close(self, conn: Any) -> None:
        """Close the connection."""
        ...

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
        dialect: what differs by database (see ``WriterDialect``).
        busy_timeout_seconds: how long a batch keeps retrying a locked database.
        checkpoint_every: write transactions between PASSIVE checkpoints.
        batch_max: most requests per transaction, and the mailbox capacity.
    """

    def __init__(
        self,
        connect: Callable[[], Connection],
        dialect: WriterDialect,
        *,
        busy_timeout_seconds: float,
        checkpoint_every: int,
        batch_max: int,
    ) -> None:
        self._connect = connect
        self._dialect = dialect
        self._busy_timeout = busy_timeout_seconds
        self._checkpoint_every = checkpoint_every
        self._batch_max = batch_max
        self._send, self._receive = trio.open_memory_channel[_Request](batch_max)
        self._limiter = trio.CapacityLimiter(1)
        self._conn: Any = None
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
        # Queued at once when there is room: the channel's own send yields to the scheduler even then,
        # and the wait for the commit below is a schedule point anyway (a step less per write).
        await trio.lowlevel.checkpoint_if_cancelled()
        try:
            try:
                self._send.send_nowait(request)
            except trio.WouldBlock:
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
                # Let the tasks already runnable queue their writes too: under load, one commit (and one
                # trip to the writer's thread) carries several, at no cost to a lone write's latency.
                # Shielded: a cancellation here would lose ``first``; ``_commit`` answers it instead.
                await trio.lowlevel.cancel_shielded_checkpoint()
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
            self._dialect.close(self._conn)
            self._conn = None

    async def _commit(self, batch: list[_Request]) -> None:
        deadline = trio.current_time() + self._busy_timeout
        try:
            while True:
                try:
                    await trio.to_thread.run_sync(self._run_batch, batch, limiter=self._limiter)
                    return
                except WriteBusy:
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
        dialect = self._dialect
        if self._conn is not None and not dialect.usable(self._conn):
            log.warning("store: the write connection broke; opening a new one")
            self._close_connection()
        if self._conn is None:
            self._conn = self._connect()
        conn = self._conn
        try:
            dialect.begin(conn)
        except dialect.errors as exc:
            raise dialect.translate(exc, "cannot start a write transaction") from exc
        results: list[outcome.Outcome] = []
        try:
            for request in batch:
                conn.execute("SAVEPOINT request")
                try:
                    value = request.op(conn)
                except Exception as exc:
                    if isinstance(exc, dialect.errors) and dialect.fails_batch(exc):
                        raise  # the connection or the file is in trouble: fail the whole batch
                    conn.execute("ROLLBACK TO request")
                    conn.execute("RELEASE request")
                    results.append(outcome.Error(_request_error(exc, dialect)))
                else:
                    conn.execute("RELEASE request")
                    results.append(outcome.Value(value))
            conn.execute("COMMIT")
        except BaseException as exc:
            if dialect.usable(conn) and dialect.in_transaction(conn):
                conn.execute("ROLLBACK")
            if isinstance(exc, Exception) and not isinstance(exc, StoreError):
                raise dialect.translate(exc, "write transaction rolled back") from exc
            raise
        self._transactions += 1
        self._largest_batch = max(self._largest_batch, len(batch))
        for request, result in zip(batch, results, strict=True):
            request.result = result
        self._since_checkpoint += 1
        if self._since_checkpoint >= self._checkpoint_every:
            self._since_checkpoint = 0
            if dialect.checkpoint(conn):
                self._checkpoints += 1


def _request_error(exc: Exception, dialect: WriterDialect) -> StoreError:
    """The error one failed request gets; its batch-mates still commit."""
    if isinstance(exc, (StoreError, *dialect.errors)):
        error = dialect.translate(exc)
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
