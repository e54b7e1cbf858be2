"""The database file: ours or refused, migrated forward, private."""

from __future__ import annotations

import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import store
from store import (
    CorruptDatabaseError,
    ForeignDatabaseError,
    SchemaVersionError,
    SessionMeta,
    SqliteSessionStore,
    StoreClosedError,
)
from store.sqlite.schema import APPLICATION_ID, LATEST_VERSION, open_writer

ROOT = Path(__file__).resolve().parents[2]


def raw(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path, isolation_level=None)


def indexed(conn: sqlite3.Connection, word: str) -> tuple[list[int], list[int]]:
    """The message ids each full-text index (words, trigrams) finds ``word`` in."""
    return tuple(  # type: ignore[return-value]  # a generator of two lists, which tuple() makes the pair the test names
        sorted(row[0] for row in conn.execute(f"SELECT rowid FROM {table} WHERE {table} MATCH ?", (word,)))
        for table in ("messages_fts", "messages_tri")
    )


class TestIdentity:
    """A file that is not a hermes-actors database is refused, untouched."""

    async def test_other_applications_database(self, tmp_path: Path) -> None:
        path = tmp_path / "state.db"
        conn = raw(path)
        conn.execute("CREATE TABLE notes (x)")
        conn.close()
        with pytest.raises(ForeignDatabaseError, match="another application"):
            async with SqliteSessionStore.open(path):
                pass
        conn = raw(path)
        assert conn.execute("SELECT name FROM sqlite_master").fetchall() == [("notes",)]
        assert conn.execute("PRAGMA application_id").fetchone() == (0,)
        conn.close()

    async def test_foreign_application_id(self, tmp_path: Path) -> None:
        path = tmp_path / "state.db"
        conn = raw(path)
        conn.execute("PRAGMA application_id = 1234")
        conn.close()
        with pytest.raises(ForeignDatabaseError, match="0x4d2"):
            async with SqliteSessionStore.open(path):
                pass

    async def test_not_sqlite(self, tmp_path: Path) -> None:
        path = tmp_path / "state.db"
        path.write_bytes(b"this is a text file, not a database" * 100)
        with pytest.raises(CorruptDatabaseError):
            async with SqliteSessionStore.open(path):
                pass

    async def test_newer_schema(self, tmp_path: Path) -> None:
        path = tmp_path / "state.db"
        open_writer(path, busy_timeout_seconds=1, synchronous="normal").close()
        conn = raw(path)
        conn.execute(f"PRAGMA user_version = {LATEST_VERSION + 1}")
        conn.close()
        with pytest.raises(SchemaVersionError, match="newer"):
            async with SqliteSessionStore.open(path):
                pass

    async def test_new_file_is_private_and_marked(self, tmp_path: Path) -> None:
        path = tmp_path / "home" / "state.db"
        async with SqliteSessionStore.open(path) as store:
            await store.create_session(SessionMeta(id="a"))
            wal = Path(f"{path}-wal")
            assert stat.S_IMODE(wal.stat().st_mode) == 0o600
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        conn = raw(path)
        assert conn.execute("PRAGMA application_id").fetchone() == (APPLICATION_ID,)
        assert conn.execute("PRAGMA user_version").fetchone() == (LATEST_VERSION,)
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        conn.close()


class TestMigration:
    """A version-1 database is upgraded in place and its old messages become substring-searchable."""

    async def test_from_v1(self, tmp_path: Path) -> None:
        path = tmp_path / "state.db"
        open_writer(path, busy_timeout_seconds=1, synchronous="normal", target_version=1).close()
        conn = raw(path)
        assert conn.execute("PRAGMA user_version").fetchone() == (1,)
        conn.execute("INSERT INTO sessions (id, source, started_at, last_active) VALUES ('v1', 'cli', 1, 1)")
        conn.execute(
            "INSERT INTO messages (session_id, role, content, created_at) VALUES ('v1', 'user', '旧いメッセージです', 1)"
        )
        conn.close()
        async with SqliteSessionStore.open(path) as store:
            assert (await store.load("v1")).messages == [{"role": "user", "content": "旧いメッセージです"}]
            found = await store.search("メッセージ")
            assert [m.session.id for m in found] == ["v1"]
            await store.record_transcript("v1", [{"after": "migration"}])
            assert len(await store.load_transcript("v1")) == 1
        conn = raw(path)
        assert conn.execute("PRAGMA user_version").fetchone() == (LATEST_VERSION,)
        conn.close()

    async def test_system_messages_leave_the_indexes(self, tmp_path: Path) -> None:
        """Version 4 takes system prompts out of both indexes, and keeps new ones out, through every write."""
        path = tmp_path / "state.db"
        open_writer(path, busy_timeout_seconds=1, synchronous="normal", target_version=3).close()
        conn = raw(path)
        conn.execute("INSERT INTO sessions (id, source, started_at, last_active) VALUES ('v3', 'cli', 1, 1)")
        for role, text in (("system", "the quokka protocol"), ("user", "a quokka question")):
            conn.execute(
                "INSERT INTO messages (session_id, role, content, created_at) VALUES ('v3', ?, ?, 1)", (role, text)
            )
        assert indexed(conn, "quokka") == ([1, 2], [1, 2])
        conn.close()
        async with SqliteSessionStore.open(path) as store:
            conn = raw(path)
            assert indexed(conn, "quokka") == ([2], [2])
            await store.create_session(
                SessionMeta(id="new"),
                messages=[{"role": "system", "content": "quokka rules"}, {"role": "user", "content": "quokka hi"}],
            )
            # Queued, not indexed, until a search (or the store's own pass a second later).
            assert indexed(conn, "quokka") == ([2], [2])
            assert conn.execute("SELECT id FROM fts_pending").fetchall() == [(4,)]
            assert [m.session.id for m in await store.search("quokka hi")] == ["new"]
            assert indexed(conn, "quokka") == ([2, 4], [2, 4])
            await store.compact("new", [{"role": "system", "content": "quokka rules"}, {"role": "user", "content": "quokka"}])
            await store.search("quokka")
            # The earlier epoch's messages stay (lineage); of the new epoch, the user message only.
            assert indexed(conn, "quokka") == ([2, 4, 6], [2, 4, 6])
            for table in ("messages_fts", "messages_tri"):
                conn.execute(f"INSERT INTO {table}({table}) VALUES ('integrity-check')")
            conn.close()

    async def test_failed_migration_rolls_back(self, tmp_path: Path) -> None:
        path = tmp_path / "state.db"
        open_writer(path, busy_timeout_seconds=1, synchronous="normal", target_version=1).close()
        conn = raw(path)
        # A table in the way of migration 2 makes it fail half-way.
        conn.execute("CREATE TABLE messages_tri (x)")
        conn.close()
        with pytest.raises(Exception, match="messages_tri"):
            async with SqliteSessionStore.open(path):
                pass
        conn = raw(path)
        assert conn.execute("PRAGMA user_version").fetchone() == (1,)
        assert conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'transcript'").fetchone() == (0,)
        conn.close()


class TestLifecycle:
    """A closed store refuses work and cannot be reopened."""

    async def test_closed(self, tmp_path: Path) -> None:
        async with SqliteSessionStore.open(tmp_path / "state.db") as store:
            await store.create_session(SessionMeta(id="a"))
        with pytest.raises(StoreClosedError):
            await store.append("a", [{"role": "user", "content": "late"}])
        with pytest.raises(StoreClosedError):
            await store.load("a")
        with pytest.raises(StoreClosedError):
            await store.run()


class TestLineageRows:
    """A compression leaves an internal lineage row; the session keeps its id."""

    async def test_compact_records_lineage(self, sqlite_store: SqliteSessionStore) -> None:
        await sqlite_store.create_session(SessionMeta(id="s1", model="m"))
        await sqlite_store.append("s1", [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}])
        assert await sqlite_store.compact("s1", [{"role": "user", "content": "summary"}]) == 1
        assert await sqlite_store.compact("s1", [{"role": "user", "content": "summary 2"}]) == 2
        conn = raw(sqlite_store.path)
        rows = conn.execute(
            "SELECT id, kind, parent_session_id, model, end_reason, message_count, epoch FROM sessions ORDER BY id"
        ).fetchall()
        conn.close()
        assert rows == [
            ("s1", "session", None, "m", None, 4, 2),
            ("s1#0", "lineage", "s1", "m", "compression", 2, 0),
            ("s1#1", "lineage", "s1", "m", "compression", 1, 1),
        ]
        await sqlite_store.delete_session("s1")
        conn = raw(sqlite_store.path)
        assert conn.execute("SELECT id, end_reason FROM sessions").fetchall() == [("s1", "deleted")]
        conn.close()


class TestPublicSurface:
    """The package exports what its __all__ names, and errors raised in an open() block arrive unwrapped."""

    def test_exports(self) -> None:
        assert all(hasattr(store, name) for name in store.__all__)
        assert issubclass(store.SessionNotFoundError, LookupError)
        assert issubclass(store.StoreIOError, OSError)

    def test_light_imports(self) -> None:
        code = (
            "import sys, store.errors, store.records, store.protocol\n"
            "assert 'trio' not in sys.modules and 'sqlite3' not in sys.modules, 'heavy import'\n"
        )
        done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr

    async def test_block_error_is_not_wrapped(self, tmp_path: Path) -> None:
        with pytest.raises(KeyError):
            async with SqliteSessionStore.open(tmp_path / "state.db"):
                raise KeyError("mine")
