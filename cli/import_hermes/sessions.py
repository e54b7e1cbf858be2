"""Hermes's sessions (``state.db``) into our store, through the store's API, so SQLite and PostgreSQL both work.

Hermes 0.19's ``state.db`` is opened read-only (an SQLite ``mode=ro`` URI), so not a byte of the Hermes
home is written: in place when Hermes closed it cleanly, else (a write-ahead log beside it: Hermes runs,
or crashed) a private copy of it and its log, as a read in place would write Hermes's shared-memory
index. Each Hermes session becomes one ended session here under the same id, with its title, source,
model, working directory, times, tokens, cost and parent; its active messages (the ones Hermes would
replay; rewound ones are not) in the conversation form both projects share, stamped with the time the
session ended. Tool results pass the secret redaction, as every tool result stored here has. A session
whose id is here already is left, so running the import twice is harmless.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import attrs

from cli.import_hermes.report import Report

if TYPE_CHECKING:
    from store.protocol import SessionStore

__all__ = ["HermesSession", "StateDbError", "plan_sessions", "read_state_db", "write_sessions"]

# The columns the import needs (Hermes 0.19's schema has more; an older one may lack some).
_SESSION_COLUMNS = ("id", "source", "model", "parent_session_id", "started_at", "ended_at", "end_reason", "title", "cwd")
_MESSAGE_COLUMNS = ("session_id", "role", "content", "tool_call_id", "tool_calls", "tool_name", "timestamp")
# Hermes marks multimodal content stored as JSON with this prefix (hermes_state.SessionDB._encode_content).
_JSON_CONTENT = "\x00json:"
_ROLES = frozenset(("system", "user", "assistant", "tool"))


class StateDbError(Exception):
    """``state.db`` cannot be read as a Hermes session database (the reason is the message)."""


@attrs.frozen
class HermesSession:
    """One Hermes session as it will be stored here."""

    id: str
    source: str
    model: str | None
    parent_session_id: str | None
    title: str | None
    cwd: str | None
    started_at: float
    ended_at: float
    end_reason: str
    tokens_in: int
    tokens_out: int
    cost: float
    messages: list[dict[str, Any]]


def read_state_db(path: Path) -> list[HermesSession]:
    """Every session of the Hermes database at ``path``, parents before their children.

    Raises:
        StateDbError: not a database, or one without the tables and columns the import needs.
    """
    wal = path.with_name(f"{path.name}-wal")
    if not wal.exists():
        # Closed cleanly (no write-ahead log): read in place. ``immutable`` keeps SQLite from creating the
        # -wal and -shm files a read-only open of a WAL database otherwise leaves beside it.
        return _read(path, "mode=ro&immutable=1")
    # A Hermes still running (or one that crashed) has changes in its log: read a private copy of the
    # database and its log, so nothing of Hermes's, its shared-memory index included, is touched.
    with tempfile.TemporaryDirectory(prefix="hermes-state-") as scratch:
        copy = Path(scratch) / "state.db"
        try:
            shutil.copyfile(path, copy)
            shutil.copyfile(wal, copy.with_name("state.db-wal"))
        except OSError as exc:
            raise StateDbError(f"cannot copy {path}: {exc.strerror}") from exc
        return _read(copy, "mode=ro")


def _read(path: Path, options: str) -> list[HermesSession]:
    try:
        conn = sqlite3.connect(f"file:{quote(str(path.resolve()))}?{options}", uri=True)
    except sqlite3.Error as exc:
        raise StateDbError(f"cannot open {path}: {exc}") from exc
    try:
        conn.row_factory = sqlite3.Row
        _check_schema(conn)
        usage = _columns(conn, "sessions")
        rows = conn.execute("SELECT * FROM sessions ORDER BY started_at, id").fetchall()
        active = " AND active = 1" if "active" in _columns(conn, "messages") else ""
        sessions = []
        for row in rows:
            messages = conn.execute(
                f"SELECT * FROM messages WHERE session_id = ?{active} ORDER BY id", (row["id"],)
            ).fetchall()
            last = max((float(m["timestamp"]) for m in messages if isinstance(m["timestamp"], (int, float))), default=None)
            sessions.append(_session(row, usage, [m for m in (_message(r) for r in messages) if m is not None], last))
        return _parents_first(sessions)
    except sqlite3.Error as exc:
        raise StateDbError(f"cannot read {path}: {exc}") from exc
    finally:
        conn.close()


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in conn.execute(f'PRAGMA table_info("{table}")')}


def _check_schema(conn: sqlite3.Connection) -> None:
    for table, needed in (("sessions", _SESSION_COLUMNS), ("messages", _MESSAGE_COLUMNS)):
        missing = [column for column in needed if column not in _columns(conn, table)]
        if missing:
            raise StateDbError(f"its {table} table lacks {', '.join(missing)}: not a Hermes 0.19 session database")


def _number(row: sqlite3.Row, column: str, usage: set[str]) -> float:
    value = row[column] if column in usage else None
    return float(value) if isinstance(value, (int, float)) and value > 0 else 0.0


def _session(row: sqlite3.Row, usage: set[str], messages: list[dict[str, Any]], last: float | None) -> HermesSession:
    """``row`` of Hermes's sessions table; ``last`` is its last message's time, when it has one."""
    cost = _number(row, "actual_cost_usd", usage) or _number(row, "estimated_cost_usd", usage)
    ended = row["ended_at"] is not None
    started = float(row["started_at"])
    return HermesSession(
        id=str(row["id"]),
        source=str(row["source"] or "cli"),
        model=row["model"],
        parent_session_id=row["parent_session_id"],
        title=row["title"] or None,
        cwd=row["cwd"],
        started_at=started,
        # A session still open in Hermes ends here at its last message.
        ended_at=max(started, float(row["ended_at"]) if ended else (last or started)),
        end_reason=str(row["end_reason"] or "ended") if ended else "imported from Hermes",
        tokens_in=int(_number(row, "input_tokens", usage)),
        tokens_out=int(_number(row, "output_tokens", usage)),
        cost=cost,
        messages=messages,
    )


def _message(row: sqlite3.Row) -> dict[str, Any] | None:
    """One Hermes message row in the conversation form (None: a role neither project replays)."""
    from tools.redact import redact_tool_result

    role = row["role"]
    if role not in _ROLES:
        return None
    content: Any = row["content"]
    if isinstance(content, str) and content.startswith(_JSON_CONTENT):
        try:
            content = json.loads(content[len(_JSON_CONTENT):])
        except ValueError:
            pass
    if role == "tool" and isinstance(content, str):
        content = redact_tool_result(content)
    message: dict[str, Any] = {"role": role, "content": content}
    if row["tool_call_id"]:
        message["tool_call_id"] = row["tool_call_id"]
    if row["tool_name"]:
        message["name"] = row["tool_name"]
    if row["tool_calls"]:
        try:
            calls = json.loads(row["tool_calls"])
        except ValueError:
            calls = None
        if isinstance(calls, list) and calls:
            message["tool_calls"] = calls
    return message


def _parents_first(sessions: list[HermesSession]) -> list[HermesSession]:
    """``sessions`` ordered so that a parent is stored before the sessions that name it."""
    by_id = {session.id: session for session in sessions}
    ordered: list[HermesSession] = []
    placed: set[str] = set()

    def place(session: HermesSession, seen: frozenset[str]) -> None:
        if session.id in placed or session.id in seen:
            return
        parent = by_id.get(session.parent_session_id or "")
        if parent is not None:
            place(parent, seen | {session.id})
        placed.add(session.id)
        ordered.append(session)

    for session in sessions:
        place(session, frozenset())
    return ordered


def _described(session: HermesSession) -> str:
    named = f"{session.title!r}, " if session.title else ""
    return f"{named}{session.source}, {len(session.messages)} messages"


def plan_sessions(sessions: list[HermesSession], report: Report) -> None:
    """``--dry-run``'s account of the sessions (our store is not opened: a running daemon may hold it)."""
    for session in sessions:
        report.took(f"session {session.id}", f"{_described(session)} (unless it was imported before)")


async def write_sessions(store: SessionStore, sessions: list[HermesSession], report: Report) -> None:
    """Store each session (ended, under its Hermes id), reporting what was taken, changed and left."""
    from store.errors import InvalidRecordError, SessionExistsError, SessionNotFoundError, TitleConflictError

    stored: set[str] = set()
    for session in sessions:
        item = f"session {session.id}"
        try:
            await store.get_session(session.id)
        except SessionNotFoundError:
            pass
        else:
            report.left(item, "already in the store (imported before)")
            stored.add(session.id)
            continue
        notes = []
        parent = session.parent_session_id
        if parent is not None and parent not in stored:
            notes.append(f"its parent {parent} is not in state.db, so it is stored as a top-level session")
            parent = None
        title = session.title
        for attempt in (title, None) if title else (None,):
            try:
                await _record(store, session, parent, attempt)
            except TitleConflictError:
                notes.append(f"its title {title!r} belongs to another session here, so it is stored untitled")
                continue
            except (InvalidRecordError, SessionExistsError, ValueError) as exc:
                report.left(item, f"not stored: {exc}")
                break
            stored.add(session.id)
            if notes:
                report.changed(item, f"{_described(session)}; " + "; ".join(notes))
            else:
                report.took(item, _described(session))
            break


async def _record(store: SessionStore, session: HermesSession, parent: str | None, title: str | None) -> None:
    from store.records import SessionMeta

    meta = SessionMeta(
        id=session.id, parent_session_id=parent, source=session.source, model=session.model, title=title,
        cwd=session.cwd, started_at=session.started_at,
    )
    await store.record_session(
        meta, messages=session.messages, state=None, reason=session.end_reason,
        tokens_in=session.tokens_in, tokens_out=session.tokens_out, cost=session.cost, ended_at=session.ended_at,
    )

