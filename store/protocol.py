"""The ``SessionStore`` protocol: what the session actor, the tools and the CLI call.

Three implementations: ``store.sqlite.SqliteSessionStore`` (the daemon's by default),
``store.postgres.PostgresSessionStore`` (``store.url``: hosts sharing one database) and
``store.memory.InMemorySessionStore`` (tests). Every method raises only
``store.errors.StoreError`` subclasses.

Compression lineage: a session keeps its id for life. ``compact`` starts a
new *epoch*: the compressed history becomes the live one, the earlier messages
stay stored (searchable, exportable, readable) under the same session id with
their old epoch number, and an internal lineage row records the closed epoch
(its id is ``<session id>#<epoch>``, its ``parent_session_id`` the session).
Lineage rows never appear in listings or search results.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from store.leases import SessionLeases
from store.records import (
    LoadedSession,
    SessionExcerpt,
    SessionInfo,
    SessionMatches,
    SessionMeta,
    StoredMessage,
    TranscriptRecord,
)

__all__ = ["DEFAULT_SEARCH_ROLES", "CronJobStore", "SessionSearchReader", "SessionStore"]

DEFAULT_SEARCH_ROLES: tuple[str, ...] = ("user", "assistant")


class SessionSearchReader(Protocol):
    """The read-only part of the store the ``session_search`` tool uses."""

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
        """Find sessions whose messages match ``query``, best first, at most ``limit`` sessions.

        Matching is full-text (FTS5 syntax allowed) with a substring fallback
        (trigram) for CJK text and word fragments. Each session appears once
        with up to 3 of its best hits. The live (current-epoch) messages of
        ``current_session_id`` are left out -- they are already in the model's
        context -- so they never crowd out older sessions.

        Raises:
            InvalidQueryError: empty query, limit outside 1-10, unknown role, since > until.
        """
        ...

    async def scroll(self, message_id: int, *, before: int = 5, after: int = 5) -> list[StoredMessage]:
        """The messages around ``message_id`` in its session (it included), oldest first.

        Raises:
            MessageNotFoundError: no such message.
        """
        ...

    async def read_session(self, session_id: str, *, head: int = 20, tail: int = 10) -> SessionExcerpt:
        """The first ``head`` and last ``tail`` messages of a session's whole history.

        Raises:
            SessionNotFoundError: no such live session.
        """
        ...

    async def browse(
        self, *, limit: int = 10, source: str | None = None, exclude_session_id: str | None = None
    ) -> list[SessionInfo]:
        """Recently active top-level sessions, most recent first, with a preview of each."""
        ...


class SessionStore(SessionSearchReader, Protocol):
    """Durable sessions: metadata, message history, state, transcript and search.

    Write methods return only after their change is committed. ``leases`` say which sessions this
    host may run (``store.leases``): a session takes its lease before it loads and gives it back
    once it has stopped.
    """

    leases: SessionLeases

    async def create_session(
        self, meta: SessionMeta, *, messages: list[dict[str, Any]] | None = None, state: dict[str, Any] | None = None
    ) -> None:
        """Create a session, with its first ``messages`` and its ``state`` when given: all in one
        commit, or nothing.

        Raises:
            SessionExistsError: the id is taken. TitleConflictError: the title is taken.
            InvalidRecordError: a message or the state cannot be stored (nothing is created then).
        """
        ...

    async def record_session(
        self, meta: SessionMeta, *, messages: list[dict[str, Any]], state: dict[str, Any] | None, reason: str,
        tokens_in: int = 0, tokens_out: int = 0, cost: float = 0.0, ended_at: float | None = None,
    ) -> None:
        """Store a session that has already ended, all in one commit: as ``create_session``, then
        ``update_counters`` with the usage, then ``end_session`` with ``reason`` (an ephemeral API
        session, kept in memory while it ran). ``ended_at`` is when it ended (default: now): its messages and
        its last activity are stamped with it too (a session brought over from Hermes keeps its time).

        Raises:
            SessionExistsError: the id is taken. InvalidRecordError: as ``create_session`` (nothing is stored).
        """
        ...

    async def append(self, session_id: str, messages: list[dict[str, Any]]) -> None:
        """Append messages to the live history; returns once they are committed.

        Raises:
            SessionNotFoundError, InvalidRecordError (nothing of the call is stored then).
        """
        ...

    async def compact(self, session_id: str, messages: list[dict[str, Any]]) -> int:
        """Replace the live history by ``messages`` (a compression) and return the new epoch.

        Raises:
            SessionNotFoundError, InvalidRecordError.
        """
        ...

    async def load(self, session_id: str) -> LoadedSession:
        """Metadata, live history and state of a session, to resume it.

        Raises:
            SessionNotFoundError.
        """
        ...

    async def get_session(self, session_id: str) -> SessionInfo:
        """One session's row.

        Raises:
            SessionNotFoundError.
        """
        ...

    async def save_state(self, session_id: str, state: dict[str, Any]) -> None:
        """Replace the session-scoped state blob (prompt snapshot, tools, cwd, todo, approvals, ...)."""
        ...

    async def record_transcript(self, session_id: str, records: Sequence[dict[str, Any]]) -> None:
        """Append records the model never sees (sandbox tool calls, operator actions, ...), in order,
        in one write: all of them or, when one is refused, none."""
        ...

    async def load_transcript(self, session_id: str) -> list[TranscriptRecord]:
        """Every transcript record of a session, oldest first."""
        ...

    async def end_session(self, session_id: str, reason: str) -> None:
        """Mark a session closed: sets ``ended_at`` and ``end_reason``."""
        ...

    async def set_title(self, session_id: str, title: str | None) -> None:
        """Set or clear a session's title.

        Raises:
            TitleConflictError: another live session has it.
        """
        ...

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
        """Add usage to a session's counters, and replace its state blob in the same commit when
        ``state`` is given (a turn's end).

        ``append`` already counts the tool calls of appended messages; ``tool_calls``
        here is for calls the history does not show (a sandbox script's calls).

        Raises:
            SessionNotFoundError, InvalidRecordError (nothing of the call is stored then).
        """
        ...

    async def list_sessions(
        self, *, limit: int = 50, offset: int = 0, source: str | None = None, top_level: bool = False
    ) -> list[SessionInfo]:
        """Live sessions, newest started first: subagents included unless ``top_level``."""
        ...

    async def session_by_title(self, title: str) -> SessionInfo | None:
        """The live session titled ``title`` (titles are unique), or None."""
        ...

    async def subagent_counts(self, parent_ids: list[str]) -> dict[str, int]:
        """How many live subagent sessions each of ``parent_ids`` started (absent: none)."""
        ...

    async def export_jsonl(self, session_id: str) -> str:
        """The whole session as JSON lines: a ``session`` line, then every message, then the transcript."""
        ...

    async def delete_session(self, session_id: str) -> None:
        """Delete a session's messages, state and transcript.

        A tombstone row keeps ``ended_at`` and ``end_reason = "deleted"``, so
        subagent rows pointing at it stay valid; the id is never reused.
        """
        ...


class CronJobStore(Protocol):
    """Scheduled jobs' records (``cron``), kept as JSON objects by job id.

    Write methods return only after their change is committed.
    """

    async def save_cron_job(self, job_id: str, record: dict[str, Any]) -> None:
        """Store a job's record, replacing the one under its id.

        Raises:
            InvalidRecordError: a bad id, or a record that is not a JSON object.
        """
        ...

    async def delete_cron_job(self, job_id: str) -> None:
        """Forget a job (nothing when there is none)."""
        ...

    async def cron_jobs(self) -> list[dict[str, Any]]:
        """Every job's record, oldest first."""
        ...
