"""The read queries both relational stores share (SQLite and PostgreSQL), in their common SQL.

Each function takes a connection first (``store.sql.Connection``) and runs in a worker thread;
multi-statement reads run in one read transaction so they see one snapshot.
"""

from __future__ import annotations

import json
from functools import partial
from typing import Any

from store.codec import decode_message
from store.errors import MessageNotFoundError, SessionNotFoundError
from store.records import (
    LoadedSession,
    SessionExcerpt,
    SessionInfo,
    StoredMessage,
    TranscriptRecord,
)
from store.shared_json import join_shared
from store.sql.connection import Connection

__all__ = [
    "LIVE_SESSION",
    "browse",
    "cron_jobs",
    "export_jsonl",
    "get_session",
    "list_sessions",
    "load",
    "load_transcript",
    "message_rows",
    "read_session",
    "scroll",
    "session_by_title",
    "session_infos",
    "subagent_counts",
]

SESSION_COLUMNS = (
    "s.id, s.parent_session_id, s.source, s.model, s.title, s.cwd, s.started_at, s.last_active, s.ended_at,"
    " s.end_reason, s.message_count, s.tool_call_count, s.tokens_in, s.tokens_out, s.cost, s.epoch,"
    " coalesce((SELECT substr(t.body, 1, 120) FROM messages AS m JOIN message_text AS t ON t.id = m.id"
    " WHERE m.session_id = s.id AND m.role = 'user' ORDER BY m.id LIMIT 1), '')"
)
LIVE_SESSION = "s.kind = 'session' AND s.deleted_at IS NULL"
_MESSAGE_COLUMNS = (
    "id, session_id, epoch, created_at, role, content, content_json, tool_calls, tool_call_id, name,"
    " tool_name, finish_reason, reasoning, extras"
)



def _info(row: tuple[Any, ...]) -> SessionInfo:
    return SessionInfo(*row)


def session_infos(conn: Connection, where: str, params: tuple[Any, ...], tail: str = "") -> list[SessionInfo]:
    """Session rows matching ``where`` (on alias ``s``), in the order ``tail`` gives."""
    rows = conn.execute(f"SELECT {SESSION_COLUMNS} FROM sessions AS s WHERE {where} {tail}", params).fetchall()
    return [_info(row) for row in rows]


def get_session(conn: Connection, session_id: str) -> SessionInfo:
    """One live session's row, or SessionNotFoundError."""
    found = session_infos(conn, f"s.id = ? AND {LIVE_SESSION}", (session_id,))
    if not found:
        raise SessionNotFoundError(f"no session {session_id!r}")
    return found[0]


def _stored(row: tuple[Any, ...]) -> StoredMessage:
    return StoredMessage(
        id=row[0], session_id=row[1], epoch=row[2], created_at=row[3], message=decode_message(*row[4:])
    )


def message_rows(conn: Connection, where: str, params: tuple[Any, ...], tail: str = "") -> list[StoredMessage]:
    """Messages matching ``where``, decoded."""
    rows = conn.execute(f"SELECT {_MESSAGE_COLUMNS} FROM messages WHERE {where} {tail}", params).fetchall()
    return [_stored(row) for row in rows]


def load(conn: Connection, session_id: str) -> LoadedSession:
    """Metadata, live history and state, from one snapshot."""
    conn.execute("BEGIN")
    try:
        info = get_session(conn, session_id)
        messages = message_rows(conn, "session_id = ? AND epoch = ?", (session_id, info.epoch), "ORDER BY id")
        row = conn.execute("SELECT state FROM session_state WHERE session_id = ?", (session_id,)).fetchone()
        state = None if row is None else join_shared(json.loads(row[0]), partial(_shared_text, conn))
    finally:
        conn.execute("COMMIT")
    return LoadedSession(info=info, messages=[m.message for m in messages], state=state)


def _shared_text(conn: Connection, digest: str) -> str | None:
    row = conn.execute("SELECT text FROM shared_json WHERE digest = ?", (digest,)).fetchone()
    return None if row is None else str(row[0])


def list_sessions(
    conn: Connection, limit: int, offset: int, source: str | None, top_level: bool
) -> list[SessionInfo]:
    """Live sessions, newest started first (only those without a parent when ``top_level``)."""
    where = LIVE_SESSION
    params: tuple[str, ...] = ()
    if source is not None:
        where, params = f"{where} AND s.source = ?", (source,)
    if top_level:
        where = f"{where} AND s.parent_session_id IS NULL"
    return session_infos(conn, where, (*params, limit, offset), "ORDER BY s.started_at DESC, s.id LIMIT ? OFFSET ?")


def session_by_title(conn: Connection, title: str) -> SessionInfo | None:
    """The live session with that title, or None."""
    found = session_infos(conn, f"s.title = ? AND {LIVE_SESSION}", (title,), "LIMIT 1")
    return found[0] if found else None


def subagent_counts(conn: Connection, parent_ids: list[str]) -> dict[str, int]:
    """Live subagent sessions per parent id."""
    if not parent_ids:
        return {}
    marks = ", ".join("?" for _ in parent_ids)
    rows = conn.execute(
        f"SELECT s.parent_session_id, count(*) FROM sessions AS s WHERE {LIVE_SESSION} "
        f"AND s.parent_session_id IN ({marks}) GROUP BY s.parent_session_id",
        tuple(parent_ids),
    ).fetchall()
    return {parent: count for parent, count in rows}


def browse(conn: Connection, limit: int, source: str | None, exclude: str | None) -> list[SessionInfo]:
    """Recently active top-level sessions."""
    where = f"{LIVE_SESSION} AND s.parent_session_id IS NULL AND s.id IS DISTINCT FROM ?"
    params: tuple[Any, ...] = (exclude,)
    if source is not None:
        where, params = f"{where} AND s.source = ?", (*params, source)
    return session_infos(conn, where, (*params, limit), "ORDER BY s.last_active DESC, s.id LIMIT ?")


def read_session(conn: Connection, session_id: str, head: int, tail: int) -> SessionExcerpt:
    """The first ``head`` and last ``tail`` messages of the whole history (all epochs)."""
    conn.execute("BEGIN")
    try:
        info = get_session(conn, session_id)
        total = conn.execute("SELECT count(*) FROM messages WHERE session_id = ?", (session_id,)).fetchone()[0]
        first = message_rows(conn, "session_id = ?", (session_id, head), "ORDER BY id LIMIT ?")
        last_n = min(tail, max(0, total - head))
        last = message_rows(conn, "session_id = ?", (session_id, last_n), "ORDER BY id DESC LIMIT ?")
    finally:
        conn.execute("COMMIT")
    omitted = total - len(first) - len(last)
    return SessionExcerpt(session=info, head=tuple(first), tail=tuple(reversed(last)), omitted=omitted)


def scroll(conn: Connection, message_id: int, before: int, after: int) -> list[StoredMessage]:
    """The message and its neighbours in its session."""
    conn.execute("BEGIN")
    try:
        row = conn.execute(
            f"SELECT m.session_id FROM messages AS m JOIN sessions AS s ON s.id = m.session_id"
            f" WHERE m.id = ? AND {LIVE_SESSION}",
            (message_id,),
        ).fetchone()
        if row is None:
            raise MessageNotFoundError(f"no message {message_id}")
        session_id = row[0]
        earlier = message_rows(
            conn, "session_id = ? AND id < ?", (session_id, message_id, before), "ORDER BY id DESC LIMIT ?"
        )
        later = message_rows(
            conn, "session_id = ? AND id >= ?", (session_id, message_id, after + 1), "ORDER BY id LIMIT ?"
        )
    finally:
        conn.execute("COMMIT")
    return [*reversed(earlier), *later]


def load_transcript(conn: Connection, session_id: str) -> list[TranscriptRecord]:
    """Every transcript record of a live session, oldest first."""
    conn.execute("BEGIN")
    try:
        get_session(conn, session_id)
        rows = conn.execute(
            "SELECT id, session_id, created_at, record FROM transcript WHERE session_id = ? ORDER BY id", (session_id,)
        ).fetchall()
    finally:
        conn.execute("COMMIT")
    return [TranscriptRecord(id=r[0], session_id=r[1], created_at=r[2], record=json.loads(r[3])) for r in rows]


def export_jsonl(conn: Connection, session_id: str) -> str:
    """The session as JSON lines: its row, its messages (every epoch), its transcript."""
    conn.execute("BEGIN")
    try:
        info = get_session(conn, session_id)
        messages = message_rows(conn, "session_id = ?", (session_id,), "ORDER BY id")
        transcript = conn.execute(
            "SELECT id, created_at, record FROM transcript WHERE session_id = ? ORDER BY id", (session_id,)
        ).fetchall()
    finally:
        conn.execute("COMMIT")
    lines = [{"type": "session", **info.to_json()}]
    lines += [{"type": "message", **m.to_json()} for m in messages]
    lines += [{"type": "transcript", "id": r[0], "created_at": r[1], "record": json.loads(r[2])} for r in transcript]
    return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)


def cron_jobs(conn: Connection) -> list[str]:
    """Every scheduled job's record (JSON), oldest first."""
    return [row[0] for row in conn.execute("SELECT record FROM cron_jobs ORDER BY rowid")]
