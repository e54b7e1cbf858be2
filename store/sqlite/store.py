"""``SqliteSessionStore``: the daemon's ``SessionStore`` on one SQLite file.

Writes go to the single writer (``store.sqlite.writer``), reads to a pool of
reader connections in worker threads. Arguments are checked and messages
encoded in the caller's task, so a bad message fails its caller without ever
reaching the writer.
"""

from __future__ import annotations

import enum
import json
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

import trio

from config.store import StoreConfig
from store.codec import dump_json, encode_message
from store.errors import InvalidRecordError, StoreClosedError
from store.protocol import DEFAULT_SEARCH_ROLES
from store.query import SearchRequest
from store.records import (
    LoadedSession,
    SessionExcerpt,
    SessionInfo,
    SessionMatches,
    SessionMeta,
    StoredMessage,
    TranscriptRecord,
)
from store.sqlite import reads, writes
from store.sqlite.reads import ReaderPool
from store.sqlite.schema import open_writer
from store.sqlite.search import search as run_search
from store.sqlite.writer import Writer, WriterStatistics
from store.validate import (
    check_browse_limit,
    check_dict,
    check_excerpt,
    check_job_id,
    check_listing,
    check_reason,
    check_scroll,
    check_session_id,
    check_title,
    check_usage,
)

__all__ = ["DB_FILENAME", "SqliteSessionStore"]

DB_FILENAME = "state.db"


class _Lifecycle(enum.Enum):
    NEW = "new"  # constructed; run() not started
    RUNNING = "running"  # run() is serving
    CLOSED = "closed"  # close() called or run() ended; never reopened


class SqliteSessionStore:
    """The session store on ``path`` (normally ``HERMES_ACTORS_HOME/state.db``).

    Use ``async with SqliteSessionStore.open(path) as store``, or, under a
    supervisor, ``await nursery.start(store.run)`` and ``store.close()``.

    Args:
        path: the database file; created (0600, in a 0700 directory) when missing.
        config: the ``store`` configuration section.
    """

    def __init__(self, path: Path, config: StoreConfig | None = None) -> None:
        self.path = Path(path)
        self.config = config or StoreConfig()
        self._state = _Lifecycle.NEW
        self._writer = Writer(
            partial(
                open_writer,
                self.path,
                busy_timeout_seconds=self.config.busy_timeout_seconds,
                synchronous=self.config.synchronous,
            ),
            busy_timeout_seconds=self.config.busy_timeout_seconds,
            checkpoint_every=self.config.checkpoint_every,
            batch_max=self.config.batch_max,
        )
        self._readers = ReaderPool(
            self.path, size=self.config.read_connections, busy_timeout_seconds=self.config.busy_timeout_seconds
        )

    @classmethod
    @asynccontextmanager
    async def open(cls, path: Path, config: StoreConfig | None = None) -> AsyncIterator[SqliteSessionStore]:
        """Open the store for the duration of the block; on exit queued writes commit, then it closes.

        Raises:
            ForeignDatabaseError, CorruptDatabaseError, SchemaVersionError, StoreIOError: the file is unusable.
        """
        store = cls(path, config)
        # Opened before the nursery, so a refused file raises its own error, not a group.
        await store._writer.connect()
        try:
            async with trio.open_nursery() as nursery:
                await nursery.start(store.run)
                try:
                    yield store
                finally:
                    store.close()
        except BaseExceptionGroup as group:
            # The writer reports failures to its callers, so a lone error here is the block's own.
            if len(group.exceptions) == 1 and not isinstance(group.exceptions[0], BaseExceptionGroup):
                raise group.exceptions[0] from group.exceptions[0].__cause__
            raise
        finally:
            store._writer.discard()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Open the database and serve writes until ``close()``; ``task_status.started()`` once open.

        Raises:
            StoreClosedError: run twice. Other StoreErrors: the file is unusable.
        """
        if self._state is not _Lifecycle.NEW:
            raise StoreClosedError("a store runs once; open a new one")
        self._state = _Lifecycle.RUNNING
        try:
            await self._writer.run(task_status=task_status)
        finally:
            self._state = _Lifecycle.CLOSED
            await self._readers.aclose()

    def close(self) -> None:
        """Stop taking writes; queued ones still commit before ``run`` returns."""
        self._writer.close()

    def statistics(self) -> WriterStatistics:
        """The writer's counters (transactions, batches, busy retries, checkpoints, queue depth)."""
        return self._writer.statistics()

    async def _read(self, fn: Any, *args: Any) -> Any:
        if self._state is not _Lifecycle.RUNNING:
            raise StoreClosedError("the store is not open")
        return await self._readers.run(fn, *args)

    # --- writes -----------------------------------------------------------------------------

    async def _write(self, op: Callable[..., Any], session_id: str, **arguments: Any) -> Any:
        return await self._writer.submit(partial(op, session_id=check_session_id(session_id), **arguments))

    async def create_session(
        self, meta: SessionMeta, *, messages: list[dict[str, Any]] | None = None, state: dict[str, Any] | None = None
    ) -> None:
        """See ``SessionStore.create_session``."""
        if not isinstance(meta, SessionMeta):
            raise InvalidRecordError(f"create_session takes a SessionMeta, got {type(meta).__name__}")
        encoded = [encode_message(m) for m in messages or ()]
        blob = None if state is None else dump_json(check_dict("session state", state), "session state")
        await self._writer.submit(
            partial(writes.create_session, meta=meta, messages=encoded, state_json=blob, now=time.time())
        )

    async def append(self, session_id: str, messages: list[dict[str, Any]]) -> None:
        """See ``SessionStore.append``."""
        encoded = [encode_message(m) for m in messages]
        await self._write(writes.append, session_id, messages=encoded, now=time.time())

    async def compact(self, session_id: str, messages: list[dict[str, Any]]) -> int:
        """See ``SessionStore.compact``."""
        encoded = [encode_message(m) for m in messages]
        return await self._write(writes.compact, session_id, messages=encoded, now=time.time())

    async def save_state(self, session_id: str, state: dict[str, Any]) -> None:
        """See ``SessionStore.save_state``."""
        blob = dump_json(check_dict("session state", state), "session state")
        await self._write(writes.save_state, session_id, state_json=blob, now=time.time())

    async def record_transcript(self, session_id: str, record: dict[str, Any]) -> None:
        """See ``SessionStore.record_transcript``."""
        blob = dump_json(check_dict("a transcript record", record), "transcript record")
        await self._write(writes.record_transcript, session_id, record_json=blob, now=time.time())

    async def end_session(self, session_id: str, reason: str) -> None:
        """See ``SessionStore.end_session``."""
        await self._write(writes.end_session, session_id, reason=check_reason(reason), now=time.time())

    async def set_title(self, session_id: str, title: str | None) -> None:
        """See ``SessionStore.set_title``."""
        await self._write(writes.set_title, session_id, title=check_title(title))

    async def update_counters(
        self,
        session_id: str,
        *,
        tokens_in: int = 0,
        tokens_out: int = 0,
        tool_calls: int = 0,
        cost: float = 0.0,
        state: dict[str, Any] | None = None,
    ) -> None:
        """See ``SessionStore.update_counters``."""
        cost = check_usage(tokens_in, tokens_out, tool_calls, cost)
        blob = None if state is None else dump_json(check_dict("session state", state), "session state")
        await self._write(
            writes.update_counters,
            session_id,
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            tool_calls=tool_calls,
            cost=cost,
            now=time.time(),
            state_json=blob,
        )

    async def delete_session(self, session_id: str) -> None:
        """See ``SessionStore.delete_session``."""
        await self._write(writes.delete_session, session_id, now=time.time())

    # --- reads ------------------------------------------------------------------------------

    async def load(self, session_id: str) -> LoadedSession:
        """See ``SessionStore.load``."""
        return await self._read(reads.load, check_session_id(session_id))

    async def get_session(self, session_id: str) -> SessionInfo:
        """See ``SessionStore.get_session``."""
        return await self._read(reads.get_session, check_session_id(session_id))

    async def load_transcript(self, session_id: str) -> list[TranscriptRecord]:
        """See ``SessionStore.load_transcript``."""
        return await self._read(reads.load_transcript, check_session_id(session_id))

    async def list_sessions(
        self, *, limit: int = 50, offset: int = 0, source: str | None = None, top_level: bool = False
    ) -> list[SessionInfo]:
        """See ``SessionStore.list_sessions``."""
        return await self._read(reads.list_sessions, *check_listing(limit, offset), source, top_level)

    async def session_by_title(self, title: str) -> SessionInfo | None:
        """See ``SessionStore.session_by_title``."""
        return await self._read(reads.session_by_title, title)

    async def subagent_counts(self, parent_ids: list[str]) -> dict[str, int]:
        """See ``SessionStore.subagent_counts``."""
        return await self._read(reads.subagent_counts, list(parent_ids))

    async def browse(
        self, *, limit: int = 10, source: str | None = None, exclude_session_id: str | None = None
    ) -> list[SessionInfo]:
        """See ``SessionSearchReader.browse``."""
        return await self._read(reads.browse, check_browse_limit(limit), source, exclude_session_id)

    async def read_session(self, session_id: str, *, head: int = 20, tail: int = 10) -> SessionExcerpt:
        """See ``SessionSearchReader.read_session``."""
        return await self._read(reads.read_session, check_session_id(session_id), *check_excerpt(head, tail))

    async def scroll(self, message_id: int, *, before: int = 5, after: int = 5) -> list[StoredMessage]:
        """See ``SessionSearchReader.scroll``."""
        return await self._read(reads.scroll, *check_scroll(message_id, before, after))

    async def search(
        self,
        query: str,
        *,
        limit: int = 3,
        roles: tuple[str, ...] = DEFAULT_SEARCH_ROLES,
        since: float | None = None,
        until: float | None = None,
        source: str | None = None,
        current_session_id: str | None = None,
    ) -> list[SessionMatches]:
        """See ``SessionSearchReader.search``."""
        request = SearchRequest.build(
            query,
            limit=limit,
            roles=roles,
            since=since,
            until=until,
            source=source,
            current_session_id=current_session_id,
        )
        return await self._read(run_search, request)

    # --- scheduled jobs ----------------------------------------------------------------------

    async def save_cron_job(self, job_id: str, record: dict[str, Any]) -> None:
        """See ``CronJobStore.save_cron_job``."""
        blob = dump_json(check_dict("a cron job", record), "cron job")
        await self._writer.submit(partial(writes.save_cron_job, job_id=check_job_id(job_id), record_json=blob, now=time.time()))

    async def delete_cron_job(self, job_id: str) -> None:
        """See ``CronJobStore.delete_cron_job``."""
        await self._writer.submit(partial(writes.delete_cron_job, job_id=check_job_id(job_id)))

    async def cron_jobs(self) -> list[dict[str, Any]]:
        """See ``CronJobStore.cron_jobs``."""
        return [json.loads(record) for record in await self._read(reads.cron_jobs)]

    async def export_jsonl(self, session_id: str) -> str:
        """See ``SessionStore.export_jsonl``."""
        return await self._read(reads.export_jsonl, check_session_id(session_id))
