"""The database file: identity (``application_id``), schema migrations, connection setup.

Migrations are applied in order inside one ``BEGIN IMMEDIATE`` transaction
each, bumping ``PRAGMA user_version``; a file with a newer version is refused.
The full-text indexes are external-content FTS5 tables over the
``message_text`` view (the text of a message's content and of its tool calls),
kept in sync by triggers: ``messages_fts`` (words, diacritics folded) and
``messages_tri`` (trigrams, for CJK and substring search). Since version 4, system messages (the
system prompt, nearly the same in every session) are not indexed, and a new message is queued in
``fts_pending`` by its own transaction and indexed with others later (``store.sqlite.indexing``).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

from store.errors import CorruptDatabaseError, ForeignDatabaseError, SchemaVersionError
from store.sqlite.translate import translate

__all__ = [
    "APPLICATION_ID",
    "LATEST_VERSION",
    "MIGRATIONS",
    "apply_migrations",
    "connect",
    "open_reader",
    "open_writer",
]

# "HAct" in ASCII: marks the file as a hermes-actors state database.
APPLICATION_ID = 0x48416374


def _body(row: str) -> str:
    """SQL for the searchable text of a message's content; ``row`` is ``new.``, ``old.`` or ''.

    Text that does not parse as JSON (a row another program wrote) has none, rather than failing the
    statement: indexing runs in batches, where it would fail every message with it. CASE tries its
    branches in order, so json_type never sees such text (nor in :func:`_calls`).
    """
    content = f"{row}content"
    return (
        f"CASE WHEN {row}content_json = 0 THEN {content} WHEN NOT json_valid({content}) THEN NULL "
        f"WHEN json_type({content}) = 'array' THEN (SELECT group_concat(json_extract(p.value, '$.text'), ' ') "
        f"FROM json_each({content}) AS p WHERE p.type = 'object') END"
    )


def _calls(row: str) -> str:
    """SQL for the searchable text of a message's tool calls (names and arguments)."""
    calls = f"{row}tool_calls"
    return (
        f"CASE WHEN NOT json_valid({calls}) THEN NULL WHEN json_type({calls}) = 'array' THEN (SELECT group_concat("
        f"coalesce(json_extract(c.value, '$.function.name'), '') || ' ' || "
        f"coalesce(json_extract(c.value, '$.function.arguments'), ''), ' ') "
        f"FROM json_each({calls}) AS c WHERE c.type = 'object') END"
    )


def _fts_triggers(table: str) -> str:
    """Triggers keeping the external-content index ``table`` in step with ``messages`` (versions 1-3)."""
    delete = (
        f"INSERT INTO {table}({table}, rowid, body, calls)"
        f" VALUES ('delete', old.id, {_body('old.')}, {_calls('old.')});"
    )
    insert = f"INSERT INTO {table}(rowid, body, calls) VALUES (new.id, {_body('new.')}, {_calls('new.')});"
    return f"""
CREATE TRIGGER {table}_ai AFTER INSERT ON messages BEGIN {insert} END;
CREATE TRIGGER {table}_ad AFTER DELETE ON messages BEGIN {delete} END;
CREATE TRIGGER {table}_au AFTER UPDATE ON messages BEGIN {delete} {insert} END;
"""


def _index_triggers() -> str:
    """Version 4's triggers: a new message is queued in ``fts_pending`` (indexed later, in batches, by
    ``store.sqlite.indexing``); a deleted or changed one leaves both indexes at once, unless it is still
    queued. System messages are never indexed."""
    queued = "EXISTS (SELECT 1 FROM fts_pending WHERE id = old.id)"
    tables = ("messages_fts", "messages_tri")
    delete = " ".join(
        f"INSERT INTO {t}({t}, rowid, body, calls) SELECT 'delete', old.id, {_body('old.')}, {_calls('old.')}"
        f" WHERE old.role <> 'system' AND NOT {queued};"
        for t in tables
    )
    insert = " ".join(
        f"INSERT INTO {t}(rowid, body, calls) SELECT new.id, {_body('new.')}, {_calls('new.')}"
        " WHERE new.role <> 'system';"
        for t in tables
    )
    return f"""
CREATE TRIGGER messages_index_ai AFTER INSERT ON messages WHEN new.role <> 'system' BEGIN
    INSERT INTO fts_pending(id) VALUES (new.id); END;
CREATE TRIGGER messages_index_ad AFTER DELETE ON messages BEGIN
    {delete} DELETE FROM fts_pending WHERE id = old.id; END;
CREATE TRIGGER messages_index_au AFTER UPDATE ON messages WHEN NOT {queued} BEGIN {delete} {insert} END;
"""


def _without_system(table: str) -> str:
    """Drop version 1-3's triggers of ``table`` and the system messages they indexed in it."""
    return f"""
DROP TRIGGER {table}_ai;
DROP TRIGGER {table}_ad;
DROP TRIGGER {table}_au;
INSERT INTO {table}({table}, rowid, body, calls)
    SELECT 'delete', t.id, t.body, t.calls FROM message_text AS t JOIN messages AS m ON m.id = t.id
    WHERE m.role = 'system';
"""


_V1 = f"""
CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL DEFAULT 'session' CHECK (kind IN ('session', 'lineage')),
    parent_session_id TEXT,
    source TEXT NOT NULL,
    model TEXT,
    title TEXT,
    cwd TEXT,
    started_at REAL NOT NULL,
    last_active REAL NOT NULL,
    ended_at REAL,
    end_reason TEXT,
    deleted_at REAL,
    message_count INTEGER NOT NULL DEFAULT 0,
    tool_call_count INTEGER NOT NULL DEFAULT 0,
    tokens_in INTEGER NOT NULL DEFAULT 0,
    tokens_out INTEGER NOT NULL DEFAULT 0,
    cost REAL NOT NULL DEFAULT 0,
    epoch INTEGER NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX sessions_title ON sessions(title) WHERE title IS NOT NULL;
CREATE INDEX sessions_last_active ON sessions(last_active);
CREATE INDEX sessions_started ON sessions(started_at);
CREATE INDEX sessions_parent ON sessions(parent_session_id);
CREATE TABLE messages (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    epoch INTEGER NOT NULL DEFAULT 0,
    role TEXT NOT NULL,
    content TEXT,
    content_json INTEGER NOT NULL DEFAULT 0,
    tool_calls TEXT,
    tool_call_id TEXT,
    name TEXT,
    tool_name TEXT,
    finish_reason TEXT,
    reasoning TEXT,
    extras TEXT,
    created_at REAL NOT NULL
);
CREATE INDEX messages_session ON messages(session_id, id);
CREATE TABLE session_state (
    session_id TEXT PRIMARY KEY REFERENCES sessions(id),
    state TEXT NOT NULL,
    updated_at REAL NOT NULL
);
CREATE VIEW message_text AS SELECT id, {_body("")} AS body, {_calls("")} AS calls FROM messages;
CREATE VIRTUAL TABLE messages_fts USING fts5(
    body, calls, content='message_text', content_rowid='id', tokenize='unicode61 remove_diacritics 2'
);
{_fts_triggers("messages_fts")}
"""

_V2 = f"""
CREATE TABLE transcript (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    record TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE INDEX transcript_session ON transcript(session_id, id);
CREATE VIRTUAL TABLE messages_tri USING fts5(
    body, calls, content='message_text', content_rowid='id', tokenize='trigram'
);
{_fts_triggers("messages_tri")}
-- Index what v1 stored. (FTS5's 'rebuild' cannot read a view with json_each on SQLite 3.40.)
INSERT INTO messages_tri(rowid, body, calls) SELECT id, body, calls FROM message_text;
"""

_V3 = """
CREATE TABLE cron_jobs (
    id TEXT PRIMARY KEY,
    record TEXT NOT NULL,
    updated_at REAL NOT NULL
);
"""

# System messages out of both indexes, and new messages indexed in batches.
# - A session's system prompt is nearly the same text in every session: indexed, any word of it matched
#   every session, and its indexing was most of a new session's first commit.
# - FTS5 writes a segment per transaction and index: one short message cost about 220 us of a commit's
#   270 us, where a batch costs under 10 us a message (store.sqlite.indexing).
# - Large JSON values of saved states (tool definitions), stored once (store.shared_json).
_V4 = (
    "CREATE TABLE fts_pending (id INTEGER PRIMARY KEY);\n"
    "CREATE TABLE shared_json (digest TEXT PRIMARY KEY, text TEXT NOT NULL, created_at REAL NOT NULL);\n"
    + _without_system("messages_fts")
    + _without_system("messages_tri")
    + f"""
DROP VIEW message_text;
CREATE VIEW message_text AS SELECT id, {_body("")} AS body, {_calls("")} AS calls FROM messages WHERE role <> 'system';
"""
    + _index_triggers()
)

# MIGRATIONS[n] takes a database from user_version n to n + 1.
MIGRATIONS: tuple[str, ...] = (_V1, _V2, _V3, _V4)
LATEST_VERSION = len(MIGRATIONS)


def connect(path: Path, busy_timeout_seconds: float) -> sqlite3.Connection:
    """A raw connection in autocommit mode (transactions are explicit), usable from any one thread at a time."""
    return sqlite3.connect(
        path,
        timeout=busy_timeout_seconds,
        isolation_level=None,
        check_same_thread=False,
        cached_statements=256,
    )


def _create_private(path: Path) -> None:
    # The history may hold secrets a user pasted: the file is the owner's alone.
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
    os.close(fd)


def _check_identity(conn: sqlite3.Connection, path: Path) -> int:
    """Return the schema version, claiming an empty file; refuse anything that is not ours."""
    try:
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
    except sqlite3.DatabaseError as exc:
        raise CorruptDatabaseError(f"{path} is not a usable SQLite database: {exc}") from exc
    if app_id == 0 and tables == 0:
        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        return 0
    if app_id != APPLICATION_ID:
        raise ForeignDatabaseError(
            f"{path} is an SQLite database of another application (application_id {app_id:#x}, "
            f"expected {APPLICATION_ID:#x}); refusing to touch it"
        )
    if version > LATEST_VERSION:
        raise SchemaVersionError(
            f"{path} has schema version {version}, newer than this hermes-actors knows ({LATEST_VERSION})"
        )
    return version


def apply_migrations(conn: sqlite3.Connection, current: int, target: int = LATEST_VERSION) -> None:
    """Run migrations ``current`` .. ``target - 1``, each in its own transaction."""
    for version in range(current, target):
        conn.execute("BEGIN IMMEDIATE")
        try:
            for statement in _statements(MIGRATIONS[version]):
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {version + 1}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise


def _statements(script: str) -> list[str]:
    """Split a script into complete statements (triggers hold inner semicolons)."""
    statements, pending = [], ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            statements.append(pending.strip())
            pending = ""
    if pending.strip():
        statements.append(pending.strip())
    return statements


def _configure(conn: sqlite3.Connection, pragmas: list[str]) -> None:
    for pragma in pragmas:
        conn.execute(pragma)


def open_writer(
    path: Path,
    *,
    busy_timeout_seconds: float,
    synchronous: str,
    target_version: int = LATEST_VERSION,
    migrate: Callable[[sqlite3.Connection, int, int], None] = apply_migrations,
) -> sqlite3.Connection:
    """Open (creating if needed) the database for writing: identity check, WAL, migrations.

    Blocking: call it from a worker thread.

    Raises:
        ForeignDatabaseError, CorruptDatabaseError, SchemaVersionError, StoreIOError, DatabaseLockedError.
    """
    try:
        if not path.exists():
            _create_private(path)
        conn = connect(path, busy_timeout_seconds)
    except (OSError, sqlite3.Error) as exc:
        raise translate(exc, f"cannot open {path}") from exc
    try:
        version = _check_identity(conn, path)
        _configure(
            conn,
            [
                "PRAGMA journal_mode = WAL",
                f"PRAGMA synchronous = {synchronous}",
                "PRAGMA foreign_keys = ON",
                # The writer checkpoints itself every N writes (PASSIVE, never blocking readers).
                "PRAGMA wal_autocheckpoint = 0",
            ],
        )
        if version < target_version:
            migrate(conn, version, target_version)
    except BaseException as exc:
        conn.close()
        if isinstance(exc, sqlite3.Error):
            raise translate(exc, f"cannot open {path}") from exc
        raise
    return conn


def open_reader(path: Path, *, busy_timeout_seconds: float) -> sqlite3.Connection:
    """A query-only connection for a worker thread (the writer has already checked and migrated the file)."""
    try:
        conn = connect(path, busy_timeout_seconds)
        conn.execute("PRAGMA query_only = ON")
    except sqlite3.Error as exc:
        raise translate(exc, f"cannot open {path} for reading") from exc
    return conn
