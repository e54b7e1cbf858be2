"""``InMemorySessionStore``: the ``SessionStore`` protocol in plain Python objects, for tests.

Same errors, epochs and tombstone rules as the SQLite store (its internal
lineage rows are not kept: nothing reads them); messages go through the same
codec, so what round-trips here round-trips there. Search is
simpler: every word of the query must occur (case-insensitively) as a
substring of a message's text; FTS5 operators are ignored.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

import attrs
import trio

from store.codec import (
    EncodedMessage,
    decode_message,
    dump_json,
    encode_message,
    message_text,
)
from store.errors import (
    InvalidRecordError,
    MessageNotFoundError,
    SessionExistsError,
    SessionNotFoundError,
    TitleConflictError,
)
from store.leases import LocalLeases
from store.protocol import DEFAULT_SEARCH_ROLES
from store.query import HITS_PER_SESSION, SearchRequest, query_terms, snippet
from store.records import (
    LoadedSession,
    SearchHit,
    SessionExcerpt,
    SessionInfo,
    SessionMatches,
    SessionMeta,
    StoredMessage,
    TranscriptRecord,
)
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

__all__ = ["InMemorySessionStore"]


@attrs.define
class _Row:
    meta: SessionMeta
    last_active: float
    ended_at: float | None = None
    end_reason: str | None = None
    deleted_at: float | None = None
    message_count: int = 0
    tool_call_count: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float = 0.0
    epoch: int = 0


@attrs.frozen
class _Message:
    id: int
    session_id: str
    epoch: int
    created_at: float
    encoded: EncodedMessage

    def stored(self) -> StoredMessage:
        """The message decoded, as the SQLite store returns it."""
        e = self.encoded
        message = decode_message(
            e.role, e.content, e.content_json, e.tool_calls, e.tool_call_id, e.name, e.tool_name,
            e.finish_reason, e.reasoning, e.extras,
        )  # fmt: skip
        return StoredMessage(self.id, self.session_id, self.epoch, self.created_at, message)


class InMemorySessionStore:
    """A ``SessionStore`` that keeps everything in memory (lost when the object goes)."""

    def __init__(self) -> None:
        # One process: every lease is its own.
        self.leases = LocalLeases()
        self._rows: dict[str, _Row] = {}
        self._messages: list[_Message] = []
        self._states: dict[str, str] = {}
        self._transcript: list[TranscriptRecord] = []
        self._cron_jobs: dict[str, str] = {}
        self._next_id = 1

    # --- helpers ----------------------------------------------------------------------------

    def _live(self, session_id: str) -> _Row:
        row = self._rows.get(check_session_id(session_id))
        if row is None or row.deleted_at is not None:
            raise SessionNotFoundError(f"no session {session_id!r}")
        return row

    def _info(self, row: _Row) -> SessionInfo:
        preview = ""
        for message in self._messages:
            if message.session_id == row.meta.id and message.encoded.role == "user":
                preview = message_text(message.stored().message)[0][:120]
                break
        m = row.meta
        return SessionInfo(
            m.id, m.parent_session_id, m.source, m.model, m.title, m.cwd, m.started_at, row.last_active,
            row.ended_at, row.end_reason, row.message_count, row.tool_call_count, row.tokens_in,
            row.tokens_out, row.cost, row.epoch, preview,
        )  # fmt: skip

    def _insert(self, row: _Row, encoded: list[EncodedMessage], now: float) -> None:
        for e in encoded:
            self._messages.append(_Message(self._next_id, row.meta.id, row.epoch, now, e))
            self._next_id += 1
        row.message_count += len(encoded)
        row.tool_call_count += sum(e.tool_call_count for e in encoded)
        row.last_active = now

    def _history(self, session_id: str) -> list[_Message]:
        return [m for m in self._messages if m.session_id == session_id]

    def _title_free(self, title: str | None, owner: str) -> None:
        if title is None:
            return
        for row in self._rows.values():
            if row.meta.title == title and row.meta.id != owner:
                raise TitleConflictError("a session with that title already exists")

    # --- writes -----------------------------------------------------------------------------

    async def create_session(
        self, meta: SessionMeta, *, messages: list[dict[str, Any]] | None = None, state: dict[str, Any] | None = None
    ) -> None:
        """See ``SessionStore.create_session``."""
        await trio.lowlevel.checkpoint()
        self._create(meta, messages, state, time.time())

    def _create(self, meta: SessionMeta, messages: list[dict[str, Any]] | None, state: dict[str, Any] | None, now: float) -> None:
        if not isinstance(meta, SessionMeta):
            raise InvalidRecordError(f"create_session takes a SessionMeta, got {type(meta).__name__}")
        encoded = [encode_message(m) for m in messages or ()]
        blob = None if state is None else dump_json(check_dict("session state", state), "session state")
        if meta.id in self._rows:
            raise SessionExistsError("a session with that id already exists")
        self._title_free(meta.title, meta.id)
        self._rows[meta.id] = row = _Row(meta=meta, last_active=meta.started_at)
        if encoded:
            self._insert(row, encoded, now)
        if blob is not None:
            self._states[meta.id] = blob

    async def record_session(
        self, meta: SessionMeta, *, messages: list[dict[str, Any]], state: dict[str, Any] | None, reason: str,
        tokens_in: int = 0, tokens_out: int = 0, cost: float = 0.0, ended_at: float | None = None,
    ) -> None:
        """See ``SessionStore.record_session``."""
        reason = check_reason(reason)
        cost = check_usage(tokens_in, tokens_out, 0, cost)
        now = time.time() if ended_at is None else float(ended_at)
        await trio.lowlevel.checkpoint()
        self._create(meta, messages, state, now)
        row = self._rows[meta.id]
        row.tokens_in, row.tokens_out, row.cost = tokens_in, tokens_out, cost
        row.ended_at, row.end_reason, row.last_active = now, reason, now

    async def append(self, session_id: str, messages: list[dict[str, Any]]) -> None:
        """See ``SessionStore.append``."""
        await trio.lowlevel.checkpoint()
        encoded = [encode_message(m) for m in messages]
        self._insert(self._live(session_id), encoded, time.time())

    async def compact(self, session_id: str, messages: list[dict[str, Any]]) -> int:
        """See ``SessionStore.compact``."""
        await trio.lowlevel.checkpoint()
        encoded = [encode_message(m) for m in messages]
        row = self._live(session_id)
        now = time.time()
        row.epoch += 1
        self._insert(row, encoded, now)
        return row.epoch

    async def save_state(self, session_id: str, state: dict[str, Any]) -> None:
        """See ``SessionStore.save_state``."""
        await trio.lowlevel.checkpoint()
        blob = dump_json(check_dict("session state", state), "session state")
        self._live(session_id)
        self._states[session_id] = blob

    async def record_transcript(self, session_id: str, records: Sequence[dict[str, Any]]) -> None:
        """See ``SessionStore.record_transcript``."""
        await trio.lowlevel.checkpoint()
        blobs = [dump_json(check_dict("a transcript record", record), "transcript record") for record in records]
        if not blobs:
            return
        self._live(session_id)
        now = time.time()
        for blob in blobs:
            self._transcript.append(TranscriptRecord(len(self._transcript) + 1, session_id, now, json.loads(blob)))

    async def end_session(self, session_id: str, reason: str) -> None:
        """See ``SessionStore.end_session``."""
        await trio.lowlevel.checkpoint()
        reason = check_reason(reason)
        row = self._live(session_id)
        row.ended_at, row.end_reason = time.time(), reason

    async def set_title(self, session_id: str, title: str | None) -> None:
        """See ``SessionStore.set_title``."""
        await trio.lowlevel.checkpoint()
        title = check_title(title)
        row = self._live(session_id)
        self._title_free(title, session_id)
        row.meta = attrs.evolve(row.meta, title=title)

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
        await trio.lowlevel.checkpoint()
        cost = check_usage(tokens_in, tokens_out, tool_calls, cost)
        blob = None if state is None else dump_json(check_dict("session state", state), "session state")
        row = self._live(session_id)
        if blob is not None:
            self._states[session_id] = blob
        row.tokens_in += tokens_in
        row.tokens_out += tokens_out
        row.tool_call_count += tool_calls
        row.cost += cost
        row.last_active = time.time()

    async def delete_session(self, session_id: str) -> None:
        """See ``SessionStore.delete_session``."""
        await trio.lowlevel.checkpoint()
        row = self._live(session_id)
        self._messages = [m for m in self._messages if m.session_id != session_id]
        self._states.pop(session_id, None)
        self._transcript = [r for r in self._transcript if r.session_id != session_id]
        now = time.time()
        row.deleted_at, row.ended_at, row.end_reason = now, now, "deleted"
        row.meta = attrs.evolve(row.meta, title=None)

    # --- reads ------------------------------------------------------------------------------

    async def load(self, session_id: str) -> LoadedSession:
        """See ``SessionStore.load``."""
        await trio.lowlevel.checkpoint()
        row = self._live(session_id)
        messages = [m.stored().message for m in self._history(session_id) if m.epoch == row.epoch]
        blob = self._states.get(session_id)
        return LoadedSession(self._info(row), messages, None if blob is None else json.loads(blob))

    async def get_session(self, session_id: str) -> SessionInfo:
        """See ``SessionStore.get_session``."""
        await trio.lowlevel.checkpoint()
        return self._info(self._live(session_id))

    async def load_transcript(self, session_id: str) -> list[TranscriptRecord]:
        """See ``SessionStore.load_transcript``."""
        await trio.lowlevel.checkpoint()
        self._live(session_id)
        return [r for r in self._transcript if r.session_id == session_id]

    def _live_rows(self) -> list[_Row]:
        return [r for r in self._rows.values() if r.deleted_at is None]

    async def list_sessions(
        self, *, limit: int = 50, offset: int = 0, source: str | None = None, top_level: bool = False
    ) -> list[SessionInfo]:
        """See ``SessionStore.list_sessions``."""
        await trio.lowlevel.checkpoint()
        check_listing(limit, offset)
        rows = [
            r for r in self._live_rows()
            if (source is None or r.meta.source == source) and not (top_level and r.meta.parent_session_id)
        ]
        rows.sort(key=lambda r: (-r.meta.started_at, r.meta.id))
        return [self._info(r) for r in rows[offset : offset + limit]]

    async def session_by_title(self, title: str) -> SessionInfo | None:
        """See ``SessionStore.session_by_title``."""
        await trio.lowlevel.checkpoint()
        found = [r for r in self._live_rows() if r.meta.title == title]
        return self._info(found[0]) if found else None

    async def subagent_counts(self, parent_ids: list[str]) -> dict[str, int]:
        """See ``SessionStore.subagent_counts``."""
        await trio.lowlevel.checkpoint()
        wanted = set(parent_ids)
        counts: dict[str, int] = {}
        for row in self._live_rows():
            parent = row.meta.parent_session_id
            if parent in wanted:
                counts[parent] = counts.get(parent, 0) + 1
        return counts

    async def browse(
        self, *, limit: int = 10, source: str | None = None, exclude_session_id: str | None = None
    ) -> list[SessionInfo]:
        """See ``SessionSearchReader.browse``."""
        await trio.lowlevel.checkpoint()
        check_browse_limit(limit)
        rows = [
            r
            for r in self._live_rows()
            if r.meta.parent_session_id is None
            and r.meta.id != exclude_session_id
            and (source is None or r.meta.source == source)
        ]
        rows.sort(key=lambda r: (-r.last_active, r.meta.id))
        return [self._info(r) for r in rows[:limit]]

    async def read_session(self, session_id: str, *, head: int = 20, tail: int = 10) -> SessionExcerpt:
        """See ``SessionSearchReader.read_session``."""
        await trio.lowlevel.checkpoint()
        check_excerpt(head, tail)
        row = self._live(session_id)
        history = [m.stored() for m in self._history(session_id)]
        first = history[:head]
        last = history[len(first) :][-tail:] if tail else []
        return SessionExcerpt(self._info(row), tuple(first), tuple(last), len(history) - len(first) - len(last))

    async def scroll(self, message_id: int, *, before: int = 5, after: int = 5) -> list[StoredMessage]:
        """See ``SessionSearchReader.scroll``."""
        await trio.lowlevel.checkpoint()
        check_scroll(message_id, before, after)
        for message in self._messages:
            if message.id == message_id:
                history = self._history(message.session_id)
                at = history.index(message)
                return [m.stored() for m in history[max(0, at - before) : at + after + 1]]
        raise MessageNotFoundError(f"no message {message_id}")

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
        await trio.lowlevel.checkpoint()
        request = SearchRequest.build(
            query,
            limit=limit,
            roles=roles,
            since=since,
            until=until,
            source=source,
            current_session_id=current_session_id,
        )
        terms = [t.casefold() for t in query_terms(request.query)]
        scored: dict[str, list[tuple[int, SearchHit]]] = {}
        for message in self._messages:
            row = self._rows[message.session_id]
            if not self._matches_filters(message, row, request):
                continue
            stored = message.stored()
            body, calls = message_text(stored.message)
            text = f"{body} {calls}".casefold()
            if not terms or not all(t in text for t in terms):
                continue
            score = sum(text.count(t) for t in terms)
            shown = body if any(t in body.casefold() for t in terms) or not calls else calls
            tool = stored.message.get("tool_name") or stored.message.get("name")
            hit = SearchHit(
                message.id, message.session_id, message.encoded.role, message.created_at, snippet(shown, terms), tool
            )
            scored.setdefault(message.session_id, []).append((score, hit))
        best = sorted(scored, key=lambda sid: (-max(s for s, _ in scored[sid]), sid))[: request.limit]
        return [
            SessionMatches(
                self._info(self._rows[sid]),
                tuple(h for _, h in sorted(scored[sid], key=lambda p: (-p[0], p[1].message_id))[:HITS_PER_SESSION]),
            )
            for sid in best
        ]

    @staticmethod
    def _matches_filters(message: _Message, row: _Row, request: SearchRequest) -> bool:
        if row.deleted_at is not None or message.encoded.role not in request.roles:
            return False
        if request.since is not None and message.created_at < request.since:
            return False
        if request.until is not None and message.created_at > request.until:
            return False
        if request.source is not None and row.meta.source != request.source:
            return False
        return not (message.session_id == request.current_session_id and message.epoch == row.epoch)

    async def save_cron_job(self, job_id: str, record: dict[str, Any]) -> None:
        """See ``CronJobStore.save_cron_job``."""
        blob = dump_json(check_dict("a cron job", record), "cron job")
        await trio.lowlevel.checkpoint()
        self._cron_jobs[check_job_id(job_id)] = blob

    async def delete_cron_job(self, job_id: str) -> None:
        """See ``CronJobStore.delete_cron_job``."""
        await trio.lowlevel.checkpoint()
        self._cron_jobs.pop(check_job_id(job_id), None)

    async def cron_jobs(self) -> list[dict[str, Any]]:
        """See ``CronJobStore.cron_jobs``."""
        await trio.lowlevel.checkpoint()
        return [json.loads(blob) for blob in self._cron_jobs.values()]

    async def export_jsonl(self, session_id: str) -> str:
        """See ``SessionStore.export_jsonl``."""
        await trio.lowlevel.checkpoint()
        row = self._live(session_id)
        lines: list[dict[str, Any]] = [{"type": "session", **self._info(row).to_json()}]
        lines += [{"type": "message", **m.stored().to_json()} for m in self._history(session_id)]
        lines += [
            {"type": "transcript", "id": r.id, "created_at": r.created_at, "record": r.record}
            for r in self._transcript
            if r.session_id == session_id
        ]
        return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
