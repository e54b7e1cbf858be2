"""What both relational stores do alike: the ``SessionStore`` protocol's methods, argument checks
and encoding, over two hooks each store provides (``_submit`` a write, ``_read``).

Arguments are checked and messages encoded in the caller's task, so a bad message fails its caller
without ever reaching the database. The operations are the shared SQL of ``store.sql.writes`` and
``store.sql.reads``; search is each store's own (``_search``).
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import trio

from store.codec import dump_json, encode_message
from store.errors import InvalidRecordError
from store.leases import SessionLeases
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
from store.shared_json import EncodedState, encode_state
from store.sql import reads, writes
from store.sql.connection import Connection
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

__all__ = ["SqlSessionStore"]

T = TypeVar("T")
S = TypeVar("S", bound="SqlSessionStore")


class SqlSessionStore:
    """The ``SessionStore`` and ``CronJobStore`` protocols over a relational database (a base class).

    Subclasses set ``_search`` (the search function for their full-text machinery) and implement
    ``_submit``, ``_read`` and the lifecycle (``run``, ``close``, ``statistics``).

    Attributes:
        path: where the data is, as ``inspect`` shows it (a file, or a URL without its password).
        leases: which sessions this host may run (``store.leases``).
    """

    path: Path | str
    leases: SessionLeases
    # Digests of the shared JSON values (store.shared_json) this store has committed; never deleted.
    _shared_stored: set[str]

    _search: ClassVar[staticmethod[[Connection, SearchRequest], list[SessionMatches]]]

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Open the database, ``task_status.started()``, and serve until ``close()``."""
        raise NotImplementedError

    def close(self) -> None:
        """Stop taking calls; those under way finish before ``run`` returns."""
        raise NotImplementedError

    def statistics(self) -> Any:
        """The store's counters (an attrs instance), for ``inspect store``."""
        raise NotImplementedError

    async def _prepare(self) -> None:
        """Open the database before ``run`` (so a refused one raises its own error, not a group)."""
        raise NotImplementedError

    async def _discard(self) -> None:
        """Release what ``_prepare`` opened if ``run`` never took charge of it."""
        raise NotImplementedError

    @asynccontextmanager
    async def _running(self: S) -> AsyncIterator[S]:
        """Run the store for the duration of the block; on exit queued writes commit, then it closes."""
        await self._prepare()
        try:
            async with trio.open_nursery() as nursery:
                await nursery.start(self.run)
                try:
                    yield self
                finally:
                    self.close()
        except BaseExceptionGroup as group:
            # The writer reports failures to its callers, so a lone error here is the block's own.
            if len(group.exceptions) == 1 and not isinstance(group.exceptions[0], BaseExceptionGroup):
                raise group.exceptions[0] from group.exceptions[0].__cause__
            raise
        finally:
            await self._discard()

    # --- writes -----------------------------------------------------------------------------

    async def _submit(self, op: Callable[[Any], T]) -> T:
        """Run the write ``op(conn)`` in one transaction; returns once it is committed."""
        raise NotImplementedError

    async def _read(self, fn: Callable[..., T], *args: Any) -> T:
        """Run the read ``fn(conn, *args)`` on a connection of the store's own."""
        raise NotImplementedError

    def _stored_shared(self, state: EncodedState | None) -> None:
        """Remember the shared values a committed write stored: later states refer to them without them."""
        if state is not None:
            self._shared_stored.update(state.shared)

    async def _write(self, op: Callable[..., Any], session_id: str, **arguments: Any) -> Any:
        return await self._submit(partial(op, session_id=check_session_id(session_id), **arguments))

    async def _session_write(self, op: Callable[..., Any], session_id: str, **arguments: Any) -> Any:
        """A write the live session itself makes (its messages, state, counters, transcript): where
        hosts share the database, fenced by the session's lease (``store.postgres.fencing``)."""
        return await self._write(op, session_id, **arguments)

    async def create_session(
        self, meta: SessionMeta, *, messages: list[dict[str, Any]] | None = None, state: dict[str, Any] | None = None
    ) -> None:
        """See ``SessionStore.create_session``."""
        if not isinstance(meta, SessionMeta):
            raise InvalidRecordError(f"create_session takes a SessionMeta, got {type(meta).__name__}")
        encoded = [encode_message(m) for m in messages or ()]
        blob = None if state is None else encode_state(state, self._shared_stored)
        await self._submit(partial(writes.create_session, meta=meta, messages=encoded, state=blob, now=time.time()))
        self._stored_shared(blob)

    async def record_session(
        self, meta: SessionMeta, *, messages: list[dict[str, Any]], state: dict[str, Any] | None, reason: str,
        tokens_in: int = 0, tokens_out: int = 0, cost: float = 0.0, ended_at: float | None = None,
    ) -> None:
        """See ``SessionStore.record_session``."""
        if not isinstance(meta, SessionMeta):
            raise InvalidRecordError(f"record_session takes a SessionMeta, got {type(meta).__name__}")
        cost = check_usage(tokens_in, tokens_out, 0, cost)
        encoded = [encode_message(m) for m in messages]
        blob = None if state is None else encode_state(state, self._shared_stored)
        await self._submit(partial(
            writes.record_session, meta=meta, messages=encoded, state=blob, reason=check_reason(reason),
            tokens_in=tokens_in, tokens_out=tokens_out, cost=cost, now=time.time() if ended_at is None else float(ended_at),
        ))
        self._stored_shared(blob)

    async def append(self, session_id: str, messages: list[dict[str, Any]]) -> None:
        """See ``SessionStore.append``."""
        encoded = [encode_message(m) for m in messages]
        await self._session_write(writes.append, session_id, messages=encoded, now=time.time())

    async def compact(self, session_id: str, messages: list[dict[str, Any]]) -> int:
        """See ``SessionStore.compact``."""
        encoded = [encode_message(m) for m in messages]
        return await self._session_write(writes.compact, session_id, messages=encoded, now=time.time())

    async def save_state(self, session_id: str, state: dict[str, Any]) -> None:
        """See ``SessionStore.save_state``."""
        blob = encode_state(state, self._shared_stored)
        await self._session_write(writes.save_state, session_id, state=blob, now=time.time())
        self._stored_shared(blob)

    async def record_transcript(self, session_id: str, records: Sequence[dict[str, Any]]) -> None:
        """See ``SessionStore.record_transcript``."""
        blobs = [dump_json(check_dict("a transcript record", record), "transcript record") for record in records]
        if blobs:
            await self._session_write(writes.record_transcript, session_id, records_json=blobs, now=time.time())

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
        blob = None if state is None else encode_state(state, self._shared_stored)
        await self._session_write(
            writes.update_counters,
            session_id,
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            tool_calls=tool_calls,
            cost=cost,
            now=time.time(),
            state=blob,
        )
        self._stored_shared(blob)

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
        return await self._run_search(request)

    async def _run_search(self, request: SearchRequest) -> list[SessionMatches]:
        """Run a checked search on a reader connection (SQLite first indexes what is still queued)."""
        return await self._read(self._search, request)

    # --- scheduled jobs ----------------------------------------------------------------------

    async def save_cron_job(self, job_id: str, record: dict[str, Any]) -> None:
        """See ``CronJobStore.save_cron_job``."""
        blob = dump_json(check_dict("a cron job", record), "cron job")
        await self._submit(partial(writes.save_cron_job, job_id=check_job_id(job_id), record_json=blob, now=time.time()))

    async def delete_cron_job(self, job_id: str) -> None:
        """See ``CronJobStore.delete_cron_job``."""
        await self._submit(partial(writes.delete_cron_job, job_id=check_job_id(job_id)))

    async def cron_jobs(self) -> list[dict[str, Any]]:
        """See ``CronJobStore.cron_jobs``."""
        return [json.loads(record) for record in await self._read(reads.cron_jobs)]

    async def export_jsonl(self, session_id: str) -> str:
        """See ``SessionStore.export_jsonl``."""
        return await self._read(reads.export_jsonl, check_session_id(session_id))
