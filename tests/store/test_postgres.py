"""What is PostgreSQL's own in its store: the schema's identity and version, a lost connection, the
password kept out of what is shown, NUL in text."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
import trio

from config.store import StoreConfig
from store import ForeignDatabaseError, SchemaVersionError, SessionMeta, StoreIOError
from store.postgres import PostgresSessionStore, redacted_url
from store.postgres.connection import PgConnection
from store.postgres import schema
from store.postgres.schema import LATEST_VERSION, SCHEMA


def _admin(url: str) -> psycopg.Connection:
    return psycopg.connect(url, autocommit=True)


class TestSchema:
    """The ``hermes`` schema is ours, versioned, and migrated once."""

    async def test_migrated_once_and_versioned(self, postgres_url: str) -> None:
        async with PostgresSessionStore.open(postgres_url):
            pass
        async with PostgresSessionStore.open(postgres_url) as store:
            await store.create_session(SessionMeta(id="s1"))
        with _admin(postgres_url) as conn:
            assert conn.execute(f"SELECT version FROM {SCHEMA}.schema_version").fetchall() == [(LATEST_VERSION,)]

    async def test_an_older_schema_is_migrated_forward(
        self, postgres_url: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A database at version 1 (before the hosts table) gets version 2, its sessions kept."""
        with monkeypatch.context() as patch:
            patch.setattr("store.postgres.schema.MIGRATIONS", schema.MIGRATIONS[:1])
            patch.setattr("store.postgres.schema.LATEST_VERSION", 1)
            async with PostgresSessionStore.open(postgres_url) as store:
                await store.create_session(SessionMeta(id="old"))
        with _admin(postgres_url) as conn:
            assert conn.execute(f"SELECT to_regclass('{SCHEMA}.hosts')").fetchone() == (None,)
        async with PostgresSessionStore.open(postgres_url) as store:
            assert (await store.get_session("old")).id == "old"
            await store.leases.acquire("old")
            assert store.leases.held() == {"old"}
        with _admin(postgres_url) as conn:
            assert conn.execute(f"SELECT version FROM {SCHEMA}.schema_version").fetchall() == [(LATEST_VERSION,)]

    async def test_system_messages_have_no_searchable_text(
        self, postgres_url: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Version 4 clears what version 3 extracted from system messages, and keeps new ones out."""
        messages = [{"role": "system", "content": "the quokka protocol"}, {"role": "user", "content": "quokka?"}]
        with monkeypatch.context() as patch:
            patch.setattr("store.postgres.schema.MIGRATIONS", schema.MIGRATIONS[:3])
            patch.setattr("store.postgres.schema.LATEST_VERSION", 3)
            async with PostgresSessionStore.open(postgres_url) as store:
                await store.create_session(SessionMeta(id="v3"), messages=messages)
        query = (
            f"SELECT session_id, role, body IS NOT NULL, words @@ to_tsquery('{SCHEMA}.hermes_words', 'quokka')"
            f" FROM {SCHEMA}.messages ORDER BY id"
        )
        with _admin(postgres_url) as conn:
            assert conn.execute(query).fetchall() == [("v3", "system", True, True), ("v3", "user", True, True)]
        async with PostgresSessionStore.open(postgres_url) as store:
            await store.create_session(SessionMeta(id="v4"), messages=messages)
            assert sorted(m.session.id for m in await store.search("quokka", roles=("user",))) == ["v3", "v4"]
        with _admin(postgres_url) as conn:
            assert conn.execute(query).fetchall() == [
                (sid, role, role == "user", role == "user") for sid in ("v3", "v4") for role in ("system", "user")
            ]

    async def test_a_newer_schema_is_refused(self, postgres_url: str) -> None:
        async with PostgresSessionStore.open(postgres_url):
            pass
        with _admin(postgres_url) as conn:
            conn.execute(f"UPDATE {SCHEMA}.schema_version SET version = version + 1")
        with pytest.raises(SchemaVersionError, match="newer"):
            async with PostgresSessionStore.open(postgres_url):
                pass

    async def test_a_foreign_hermes_schema_is_refused_untouched(self, postgres_url: str) -> None:
        with _admin(postgres_url) as conn:
            conn.execute(f"CREATE SCHEMA {SCHEMA}")
            conn.execute(f"CREATE TABLE {SCHEMA}.notes (x int)")
        with pytest.raises(ForeignDatabaseError):
            async with PostgresSessionStore.open(postgres_url):
                pass
        with _admin(postgres_url) as conn:
            tables = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = %s", (SCHEMA,)).fetchall()
        assert tables == [("notes",)]


class TestConnections:
    """A connection the server drops is replaced; an unreachable server is a clear error."""

    async def test_the_writer_reconnects_after_its_connection_is_killed(self, postgres_url: str) -> None:
        async with PostgresSessionStore.open(postgres_url) as store:
            await store.create_session(SessionMeta(id="s1"))
            with _admin(postgres_url) as conn:
                conn.execute(
                    "SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity"
                    " WHERE application_name = 'hermes-actors writer' AND datname = current_database()"
                )
            # The batch that finds the connection dead fails; the next one runs on a new connection.
            with pytest.raises(StoreIOError):
                await store.append("s1", [{"role": "user", "content": "lost"}])
            await store.append("s1", [{"role": "user", "content": "kept"}])
            assert [m["content"] for m in (await store.load("s1")).messages] == ["kept"]

    async def test_an_unreachable_server(self, tmp_path: object) -> None:
        url = f"postgresql://nobody@/nodb?host={tmp_path}"
        with pytest.raises(StoreIOError, match="cannot"):
            async with PostgresSessionStore.open(url, StoreConfig(busy_timeout_seconds=0.5)):
                pass


class TestText:
    """What PostgreSQL's text could not hold, and what must not be shown."""

    async def test_nul_and_the_escape_mark_round_trip(self, postgres_url: str) -> None:
        text = "a\x00b\U0010ffff0c\U0010ffff\U0010ffff\x00"
        async with PostgresSessionStore.open(postgres_url) as store:
            await store.create_session(SessionMeta(id="s1", title=text))
            await store.append("s1", [{"role": "tool", "tool_call_id": "c", "name": text, "content": text}])
            loaded = await store.load("s1")
        assert loaded.messages == [{"role": "tool", "tool_call_id": "c", "name": text, "content": text}]
        assert loaded.info.title == text

    def test_the_password_is_redacted(self, postgres_url: str) -> None:
        parts = urlsplit(postgres_url)
        url = urlunsplit(parts._replace(netloc="postgres:s3cret@db.example:5433"))
        assert redacted_url(url) == urlunsplit(parts._replace(netloc="postgres:***@db.example:5433"))
        assert redacted_url("postgresql://u@/db") == "postgresql://u@/db"


class TestCancellation:
    """A read whose caller goes away stops at the server, and the pool goes on."""

    async def test_a_cancelled_read_is_stopped_at_the_server(self, postgres_url: str) -> None:
        def slow(conn: PgConnection) -> None:
            conn.execute("SELECT pg_sleep(30)")

        async with PostgresSessionStore.open(postgres_url) as store:
            began = trio.current_time()
            with trio.move_on_after(0.3):
                await store._read(slow)
            assert trio.current_time() - began < 5
            with _admin(postgres_url) as conn, trio.fail_after(10):
                while conn.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep%%' AND state = 'active'"
                ).fetchone() != (0,):
                    await trio.sleep(0.05)
            await store.create_session(SessionMeta(id="after"))
            assert (await store.get_session("after")).id == "after"
