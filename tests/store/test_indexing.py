"""New messages are indexed for search in batches: a while after they are written, before any search,
and at the next start for what a stopped store left queued."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from store import SessionMeta, SqliteSessionStore, StoreClosedError, StoreIOError
from store.sqlite import indexing
from store.sqlite.indexing import DeferredIndex, index_pending
from store.sqlite.schema import open_writer
from tests.store.conftest import CONFIG


def queued(path: Path) -> list[int]:
    conn = sqlite3.connect(path)
    try:
        return [row[0] for row in conn.execute("SELECT id FROM fts_pending ORDER BY id")]
    finally:
        conn.close()


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


async def wait_until_indexed(path: Path) -> None:
    """Until the store's own pass (its delay shortened by the test) has emptied the queue; 5 s at most."""
    with trio.fail_after(5):
        while queued(path):
            await trio.sleep(0.01)


class TestStore:
    """What a store's users see: every committed message is found, and indexing is batched."""

    async def test_a_pass_follows_writes_without_a_search(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(indexing, "INDEX_DELAY_SECONDS", 0.05)
        path = tmp_path / "state.db"
        async with SqliteSessionStore.open(path, CONFIG) as store:
            await store.create_session(SessionMeta(id="s"))
            for i in range(20):
                await store.append("s", [user(f"message {i}")])
            await wait_until_indexed(path)
            conn = sqlite3.connect(path)
            found = conn.execute("SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'message'").fetchone()
            assert found == (20,)
            conn.close()

    async def test_a_search_finds_what_was_just_written(self, sqlite_store: SqliteSessionStore) -> None:
        await sqlite_store.create_session(SessionMeta(id="s"), messages=[user("the walrus plan")])
        await sqlite_store.append("s", [{"role": "assistant", "content": "a walrus answer"}])
        assert queued(sqlite_store.path) == [1, 2]
        found = await sqlite_store.search("walrus", roles=("assistant",))
        assert [hit.message_id for match in found for hit in match.hits] == [2]
        assert queued(sqlite_store.path) == []

    async def test_what_another_connection_queued_is_found(self, sqlite_store: SqliteSessionStore) -> None:
        """Hosts sharing the file: a search indexes whatever is queued, not only its own writes."""
        await sqlite_store.create_session(SessionMeta(id="s"))
        await sqlite_store.search("nothing")
        other = sqlite3.connect(sqlite_store.path, isolation_level=None)
        other.execute("INSERT INTO messages (session_id, role, content, created_at) VALUES ('s', 'user', 'narwhal', 1)")
        other.close()
        assert [m.session.id for m in await sqlite_store.search("narwhal")] == ["s"]

    async def test_what_a_stopped_store_left_queued_is_indexed_at_start(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        path = tmp_path / "state.db"
        async with SqliteSessionStore.open(path, CONFIG) as store:
            await store.create_session(SessionMeta(id="s"), messages=[user("left behind")])
        assert queued(path) == [1]
        monkeypatch.setattr(indexing, "INDEX_DELAY_SECONDS", 0.01)
        async with SqliteSessionStore.open(path, CONFIG):
            await wait_until_indexed(path)

    def test_a_large_backlog_is_indexed_in_bounded_passes(self, tmp_path: Path) -> None:
        conn = open_writer(tmp_path / "state.db", busy_timeout_seconds=1, synchronous="normal")
        conn.execute("INSERT INTO sessions (id, source, started_at, last_active) VALUES ('s', 'cli', 1, 1)")
        conn.executemany(
            "INSERT INTO messages (session_id, role, content, created_at) VALUES ('s', ?, ?, 1)",
            [("system" if i == 0 else "user", f"word{i} common") for i in range(25)],
        )
        assert index_pending(conn, limit=10) is True
        assert conn.execute("SELECT count(*) FROM fts_pending").fetchone() == (14,)
        assert index_pending(conn, limit=10) is True
        assert index_pending(conn, limit=10) is False
        assert index_pending(conn, limit=10) is False
        for table in ("messages_fts", "messages_tri"):
            assert conn.execute(f"SELECT count(*) FROM {table} WHERE {table} MATCH 'common'").fetchone() == (24,)
            conn.execute(f"INSERT INTO {table}({table}) VALUES ('integrity-check')")
        conn.close()

    async def test_a_row_that_is_not_json_holds_up_no_other(self, sqlite_store: SqliteSessionStore) -> None:
        """A row whose JSON columns do not parse (written by hand, or by another program) is stored and
        not searchable; it never fails the pass that indexes the messages around it."""
        await sqlite_store.create_session(SessionMeta(id="s"), messages=[user("okapi one")])
        raw = sqlite3.connect(sqlite_store.path, isolation_level=None)
        raw.execute(
            "INSERT INTO messages (session_id, role, content, content_json, tool_calls, created_at)"
            " VALUES ('s', 'assistant', '[{\"text\": okapi', 1, '{not json', 1)"
        )
        raw.close()
        await sqlite_store.append("s", [user("okapi three")])
        found = await sqlite_store.search("okapi", roles=("user", "assistant"))
        assert sorted(hit.message_id for match in found for hit in match.hits) == [1, 3]
        assert queued(sqlite_store.path) == []
        await sqlite_store.delete_session("s")
        assert await sqlite_store.search("okapi") == []

    async def test_an_edit_while_queued_is_indexed_as_it_is_then(self, sqlite_store: SqliteSessionStore) -> None:
        await sqlite_store.create_session(SessionMeta(id="s"), messages=[user("first draft")])
        edit = sqlite3.connect(sqlite_store.path, isolation_level=None)
        edit.execute("UPDATE messages SET content = 'second draft' WHERE id = 1")
        await sqlite_store.search("draft")
        edit.execute("UPDATE messages SET content = 'third version' WHERE id = 1")
        edit.close()
        assert await sqlite_store.search("first") == []
        assert await sqlite_store.search("second") == []
        assert [m.session.id for m in await sqlite_store.search("third")] == ["s"]


class _FakeStore:
    """The writer and a reader, as far as :class:`DeferredIndex` sees them: a queue of messages."""

    def __init__(self) -> None:
        self.queued = 0
        self.passes = 0
        self.fail: Exception | None = None

    async def submit(self, op: Callable[[Any], bool]) -> bool:
        assert op is index_pending
        self.passes += 1
        if self.fail is not None:
            raise self.fail
        self.queued = max(0, self.queued - 2)
        return self.queued > 0

    async def read(self, fn: Callable[[Any], bool]) -> bool:
        return self.queued > 0


class TestScheduling:
    """When passes run (in-process, on the autojump clock)."""

    async def test_writes_within_the_delay_share_one_pass(self, autojump_clock: trio.testing.MockClock) -> None:
        fake = _FakeStore()
        index = DeferredIndex(fake.submit, fake.read, delay=1.0)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(index.run)
            await trio.sleep(2)
            assert fake.passes == 1, "what an earlier run left queued is indexed a delay after the start"
            for _ in range(5):
                fake.queued += 1
                index.written()
                await trio.sleep(0.1)
            await trio.sleep(0.95)
            # 0.5 s of writes, one pass a second after the first; 5 queued, 2 a pass.
            assert fake.passes == 4 and fake.queued == 0
            await trio.sleep(10)
            assert fake.passes == 4, "no write, no pass"
            nursery.cancel_scope.cancel()

    async def test_a_search_indexes_only_when_something_is_queued(self) -> None:
        fake = _FakeStore()
        index = DeferredIndex(fake.submit, fake.read)
        await index.catch_up()
        assert fake.passes == 0
        fake.queued = 3
        await index.catch_up()
        assert fake.passes == 2 and fake.queued == 0

    async def test_a_failed_pass_is_logged_and_retried_at_the_next_write(
        self, autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
    ) -> None:
        fake = _FakeStore()
        fake.queued = 1
        fake.fail = StoreIOError("disk I/O error")
        index = DeferredIndex(fake.submit, fake.read, delay=1.0)
        with trio.fail_after(100):
            await self._fail_then_close(index, fake, caplog)

    async def _fail_then_close(self, index: DeferredIndex, fake: _FakeStore, caplog: pytest.LogCaptureFixture) -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(index.run)
            with caplog.at_level(logging.WARNING, logger="store.sqlite.indexing"):
                await trio.sleep(1.5)
            assert "indexing new messages for search failed: disk I/O error" in caplog.text
            fake.fail = None
            index.written()
            await trio.sleep(1.5)
            assert fake.queued == 0 and fake.passes == 2
            fake.fail = StoreClosedError("the store is closed")
            index.written()
        # Reached only because run() returned by itself once the store was closed.
        assert fake.passes == 3
