"""The write operations both relational stores share (SQLite and PostgreSQL), in their common SQL.

Each runs inside the single writer's transaction (``store.sql.writer``), under a savepoint of its own.
Every function takes the connection first (``store.sql.Connection``) and is bound to its arguments
with ``functools.partial`` by the store; a ``StoreError`` it raises fails that request alone.
"""

from __future__ import annotations

from collections.abc import Sequence

from store.codec import EncodedMessage
from store.errors import SessionExistsError, SessionNotFoundError
from store.records import SessionMeta
from store.shared_json import EncodedState
from store.sql.connection import Connection, Cursor

__all__ = [
    "append",
    "compact",
    "create_session",
    "delete_cron_job",
    "delete_session",
    "end_session",
    "live_epoch",
    "record_transcript",
    "save_cron_job",
    "save_state",
    "set_title",
    "update_counters",
]

_INSERT_MESSAGE = (
    "INSERT INTO messages (session_id, epoch, role, content, content_json, tool_calls, tool_call_id, name,"
    " tool_name, finish_reason, reasoning, extras, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_LIVE = "id = ? AND kind = 'session' AND deleted_at IS NULL"


def live_epoch(conn: Connection, session_id: str) -> int:
    """The current epoch of a live session.

    Raises:
        SessionNotFoundError: no live session has that id.
    """
    row = conn.execute(f"SELECT epoch FROM sessions WHERE {_LIVE}", (session_id,)).fetchone()
    if row is None:
        raise SessionNotFoundError(f"no session {session_id!r}")
    return int(row[0])


def _require(cursor: Cursor, session_id: str) -> None:
    if cursor.rowcount == 0:
        raise SessionNotFoundError(f"no session {session_id!r}")


def create_session(
    conn: Connection, meta: SessionMeta, messages: Sequence[EncodedMessage] = (), state: EncodedState | None = None,
    now: float = 0.0,
) -> None:
    """Insert a new session row (ids and titles are unique: IntegrityError otherwise), with its first
    messages and its state blob when given (``now``: when they were written)."""
    # Checked first so a taken id is reported as such even when the title is taken too.
    if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (meta.id,)).fetchone() is not None:
        raise SessionExistsError("a session with that id already exists")
    conn.execute(
        "INSERT INTO sessions (id, parent_session_id, source, model, title, cwd, started_at, last_active)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (
            meta.id,
            meta.parent_session_id,
            meta.source,
            meta.model,
            meta.title,
            meta.cwd,
            meta.started_at,
            meta.started_at,
        ),
    )
    if messages:
        append(conn, meta.id, list(messages), now)
    if state is not None:
        save_state(conn, meta.id, state, now)


def _insert(
    conn: Connection, session_id: str, epoch: int, messages: list[EncodedMessage], now: float
) -> None:
    conn.executemany(
        _INSERT_MESSAGE,
        [
            (
                session_id,
                epoch,
                m.role,
                m.content,
                int(m.content_json),
                m.tool_calls,
                m.tool_call_id,
                m.name,
                m.tool_name,
                m.finish_reason,
                m.reasoning,
                m.extras,
                now,
            )
            for m in messages
        ],
    )
    conn.execute(
        "UPDATE sessions SET message_count = message_count + ?, tool_call_count = tool_call_count + ?,"
        " last_active = ? WHERE id = ?",
        (len(messages), sum(m.tool_call_count for m in messages), now, session_id),
    )


def append(conn: Connection, session_id: str, messages: list[EncodedMessage], now: float) -> None:
    """Add messages to the session's live epoch."""
    _insert(conn, session_id, live_epoch(conn, session_id), messages, now)


def compact(conn: Connection, session_id: str, messages: list[EncodedMessage], now: float) -> int:
    """Close the live epoch with a lineage row, start the next one with ``messages``; return its number."""
    epoch = live_epoch(conn, session_id)
    conn.execute(
        "INSERT INTO sessions (id, kind, parent_session_id, source, model, cwd, started_at, last_active,"
        " ended_at, end_reason, message_count, epoch)"
        " SELECT s.id || '#' || s.epoch, 'lineage', s.id, s.source, s.model, s.cwd,"
        " coalesce((SELECT min(created_at) FROM messages WHERE session_id = s.id AND epoch = s.epoch), s.started_at),"
        " ?, ?, 'compression',"
        " (SELECT count(*) FROM messages WHERE session_id = s.id AND epoch = s.epoch), s.epoch"
        " FROM sessions AS s WHERE s.id = ?",
        (now, now, session_id),
    )
    conn.execute("UPDATE sessions SET epoch = epoch + 1 WHERE id = ?", (session_id,))
    _insert(conn, session_id, epoch + 1, messages, now)
    return epoch + 1


def save_state(conn: Connection, session_id: str, state: EncodedState, now: float) -> None:
    """Replace the session's state blob (storing the shared values it refers to first)."""
    live_epoch(conn, session_id)
    if state.shared:
        conn.executemany(
            "INSERT INTO shared_json (digest, text, created_at) VALUES (?, ?, ?) ON CONFLICT (digest) DO NOTHING",
            [(digest, text, now) for digest, text in state.shared.items()],
        )
    conn.execute(
        "INSERT INTO session_state (session_id, state, updated_at) VALUES (?, ?, ?)"
        " ON CONFLICT (session_id) DO UPDATE SET state = excluded.state, updated_at = excluded.updated_at",
        (session_id, state.text, now),
    )


def record_transcript(conn: Connection, session_id: str, records_json: list[str], now: float) -> None:
    """Append transcript records, in order."""
    live_epoch(conn, session_id)
    conn.executemany(
        "INSERT INTO transcript (session_id, record, created_at) VALUES (?, ?, ?)",
        [(session_id, record_json, now) for record_json in records_json],
    )


def end_session(conn: Connection, session_id: str, reason: str, now: float) -> None:
    """Set ``ended_at`` and ``end_reason``."""
    cursor = conn.execute(f"UPDATE sessions SET ended_at = ?, end_reason = ? WHERE {_LIVE}", (now, reason, session_id))
    _require(cursor, session_id)


def record_session(
    conn: Connection, meta: SessionMeta, messages: Sequence[EncodedMessage], state: EncodedState | None, reason: str,
    tokens_in: int, tokens_out: int, cost: float, now: float,
) -> None:
    """A session that has already ended: created, counted and ended in the caller's one transaction."""
    create_session(conn, meta, messages, state, now)
    update_counters(conn, meta.id, tokens_in, tokens_out, 0, cost, now)
    end_session(conn, meta.id, reason, now)


def set_title(conn: Connection, session_id: str, title: str | None) -> None:
    """Set or clear the title (unique: IntegrityError when taken)."""
    cursor = conn.execute(f"UPDATE sessions SET title = ? WHERE {_LIVE}", (title, session_id))
    _require(cursor, session_id)


def update_counters(
    conn: Connection,
    session_id: str,
    tokens_in: int,
    tokens_out: int,
    tool_calls: int,
    cost: float,
    now: float,
    state: EncodedState | None = None,
) -> None:
    """Add usage to the counters (and replace the state blob when given)."""
    cursor = conn.execute(
        "UPDATE sessions SET tokens_in = tokens_in + ?, tokens_out = tokens_out + ?,"
        f" tool_call_count = tool_call_count + ?, cost = cost + ?, last_active = ? WHERE {_LIVE}",
        (tokens_in, tokens_out, tool_calls, cost, now, session_id),
    )
    _require(cursor, session_id)
    if state is not None:
        save_state(conn, session_id, state, now)


def delete_session(conn: Connection, session_id: str, now: float) -> None:
    """Remove the session's content and lineage rows, leaving a tombstone (see the protocol)."""
    live_epoch(conn, session_id)
    conn.execute("DELETE FROM messages WHERE session_id = ?", (session_id,))
    conn.execute("DELETE FROM session_state WHERE session_id = ?", (session_id,))
    conn.execute("DELETE FROM transcript WHERE session_id = ?", (session_id,))
    conn.execute("DELETE FROM sessions WHERE kind = 'lineage' AND parent_session_id = ?", (session_id,))
    conn.execute(
        "UPDATE sessions SET deleted_at = ?, ended_at = ?, end_reason = 'deleted', title = NULL WHERE id = ?",
        (now, now, session_id),
    )


def save_cron_job(conn: Connection, *, job_id: str, record_json: str, now: float) -> None:
    """Insert or replace a scheduled job's record."""
    conn.execute(
        "INSERT INTO cron_jobs (id, record, updated_at) VALUES (?, ?, ?)"
        " ON CONFLICT(id) DO UPDATE SET record = excluded.record, updated_at = excluded.updated_at",
        (job_id, record_json, now),
    )


def delete_cron_job(conn: Connection, *, job_id: str) -> None:
    """Forget a scheduled job (nothing when there is none)."""
    conn.execute("DELETE FROM cron_jobs WHERE id = ?", (job_id,))
