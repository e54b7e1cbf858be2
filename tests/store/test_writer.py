"""The single writer: batching, busy retry, failure isolation, checkpoints, shutdown."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest
import trio

from config.store import StoreConfig
from store.sqlite import indexing
from tests.steps import counted_steps, steps_of_current_task
from store import (
    DatabaseLockedError,
    SessionMeta,
    SessionNotFoundError,
    SqliteSessionStore,
    StoreClosedError,
    StoreError,
    StoreIOError,
)


@pytest.fixture(autouse=True)
def no_index_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests count the writer's work. The store's deferred index pass, a second after writes, is a
    write too: on a machine slow enough that a test outlasts that second, it would be counted with them."""
    monkeypatch.setattr(indexing, "INDEX_DELAY_SECONDS", 3600.0)


def user(i: int) -> dict[str, str]:
    return {"role": "user", "content": f"message {i}"}


class TestBatching:
    """Concurrent writes share transactions, and each caller returns only once committed."""

    async def test_many_tasks_fewer_transactions(self, sqlite_store: SqliteSessionStore) -> None:
        await sqlite_store.create_session(SessionMeta(id="a"))
        before = sqlite_store.statistics()
        committed: list[int] = []
        reader = sqlite3.connect(sqlite_store.path)

        async def append(i: int) -> None:
            await sqlite_store.append("a", [user(i)])
            # Visible to an unrelated connection the moment append returns.
            row = reader.execute("SELECT count(*) FROM messages WHERE content = ?", (f"message {i}",)).fetchone()
            assert row == (1,)
            committed.append(i)

        async with trio.open_nursery() as nursery:
            for i in range(200):
                nursery.start_soon(append, i)
        reader.close()
        after = sqlite_store.statistics()
        assert sorted(committed) == list(range(200))
        assert after.requests - before.requests == 200
        assert after.transactions - before.transactions < 200
        assert after.largest_batch > 1
        assert len((await sqlite_store.load("a")).messages) == 200

    async def test_writes_a_step_apart_share_a_transaction(self, sqlite_store: SqliteSessionStore) -> None:
        """The writer lets the tasks runnable when a write arrives queue theirs before it commits."""
        await sqlite_store.create_session(SessionMeta(id="a"))
        before = sqlite_store.statistics().transactions

        async def append(i: int) -> None:
            if i:
                await trio.lowlevel.checkpoint()
            await sqlite_store.append("a", [user(i)])

        async with trio.open_nursery() as nursery:
            for i in range(10):
                nursery.start_soon(append, i)
        assert sqlite_store.statistics().transactions - before == 1

    async def test_a_lone_write_wakes_its_caller_once(self, sqlite_store: SqliteSessionStore) -> None:
        """A write to an idle writer takes its caller one scheduler step (the wait for its commit), not
        a second one for queueing it."""
        await sqlite_store.create_session(SessionMeta(id="a"))
        with counted_steps(steps_of_current_task()) as steps:
            await sqlite_store.append("a", [user(0)])
        assert steps.count == 1
        assert [m["content"] for m in (await sqlite_store.load("a")).messages] == ["message 0"]

    async def test_batch_max_bounds_a_transaction(self, tmp_path: Path) -> None:
        async with SqliteSessionStore.open(tmp_path / "s.db", StoreConfig(batch_max=4)) as store:
            await store.create_session(SessionMeta(id="a"))
            async with trio.open_nursery() as nursery:
                for i in range(40):
                    nursery.start_soon(store.append, "a", [user(i)])
            assert store.statistics().largest_batch <= 4

    async def test_checkpoint_every_n_writes(self, tmp_path: Path) -> None:
        async with SqliteSessionStore.open(tmp_path / "s.db", StoreConfig(checkpoint_every=10)) as store:
            await store.create_session(SessionMeta(id="a"))
            for i in range(29):
                await store.append("a", [user(i)])
            assert store.statistics().checkpoints == 3  # after writes 10, 20 and 30


class TestFailureIsolation:
    """One bad request fails alone; its batch-mates commit."""

    async def test_bad_request_in_a_batch(self, sqlite_store: SqliteSessionStore) -> None:
        await sqlite_store.create_session(SessionMeta(id="a"))
        outcomes: dict[str, str] = {}

        async def attempt(sid: str) -> None:
            try:
                await sqlite_store.append(sid, [{"role": "user", "content": sid}])
                outcomes[sid] = "ok"
            except SessionNotFoundError:
                outcomes[sid] = "missing"

        async with trio.open_nursery() as nursery:
            for sid in ["a", "ghost", "a", "ghost2", "a"]:
                nursery.start_soon(attempt, sid)
        assert outcomes == {"a": "ok", "ghost": "missing", "ghost2": "missing"}
        assert len((await sqlite_store.load("a")).messages) == 3

    async def test_crashing_op_does_not_kill_the_writer(
        self, sqlite_store: SqliteSessionStore, caplog: pytest.LogCaptureFixture
    ) -> None:
        def broken(conn: sqlite3.Connection) -> None:
            conn.execute("INSERT INTO sessions (id, source, started_at, last_active) VALUES ('half', 'x', 0, 0)")
            raise ZeroDivisionError("bug")

        with caplog.at_level(logging.ERROR), pytest.raises(StoreError, match="internal error"):
            await sqlite_store._writer.submit(broken)
        assert "write request crashed" in caplog.text
        await sqlite_store.create_session(SessionMeta(id="half"))  # the partial insert was rolled back


class TestDiskErrors:
    """A full disk fails the whole batch with StoreIOError; the writer goes on once there is room."""

    async def test_database_full(self, sqlite_store: SqliteSessionStore, caplog: pytest.LogCaptureFixture) -> None:
        await sqlite_store.create_session(SessionMeta(id="a"))

        def page_limit(pages: int) -> Callable[[sqlite3.Connection], int]:
            return lambda conn: conn.execute(f"PRAGMA max_page_count = {pages}").fetchone()[0]

        used = await sqlite_store._writer.submit(lambda conn: conn.execute("PRAGMA page_count").fetchone()[0])
        await sqlite_store._writer.submit(page_limit(used))
        with pytest.raises(StoreIOError, match="full"):
            await sqlite_store.append("a", [{"role": "user", "content": "x" * 100_000}])
        assert "write transaction failed" in caplog.text
        await sqlite_store._writer.submit(page_limit(1_000_000))
        await sqlite_store.append("a", [user(1)])
        assert (await sqlite_store.load("a")).messages == [user(1)]

    async def test_unopenable_path(self, tmp_path: Path) -> None:
        (tmp_path / "state.db").mkdir()
        with pytest.raises(StoreIOError):
            async with SqliteSessionStore.open(tmp_path / "state.db"):
                pass


class TestBusy:
    """A lock held by another connection is waited out with retries, then reported."""

    async def test_waits_for_the_lock(self, sqlite_store: SqliteSessionStore) -> None:
        await sqlite_store.create_session(SessionMeta(id="a"))
        other = sqlite3.connect(sqlite_store.path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        done = trio.Event()

        async def append() -> None:
            await sqlite_store.append("a", [user(1)])
            done.set()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(append)
            with trio.fail_after(5):
                while sqlite_store.statistics().busy_retries < 3:  # 20-150 ms apart
                    await trio.sleep(0.01)
            assert not done.is_set()
            other.execute("COMMIT")
            with trio.fail_after(5):
                await done.wait()
        other.close()
        assert (await sqlite_store.load("a")).messages == [user(1)]

    async def test_gives_up_after_the_busy_timeout(self, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
        config = StoreConfig(busy_timeout_seconds=0.3)
        async with SqliteSessionStore.open(tmp_path / "s.db", config) as store:
            await store.create_session(SessionMeta(id="a"))
            other = sqlite3.connect(store.path, isolation_level=None)
            other.execute("BEGIN IMMEDIATE")
            try:
                with trio.fail_after(5), pytest.raises(DatabaseLockedError, match="locked"):
                    await store.append("a", [user(1)])
            finally:
                other.execute("ROLLBACK")
                other.close()
            assert "stayed locked" in caplog.text
            await store.append("a", [user(2)])
            assert (await store.load("a")).messages == [user(2)]


class TestShutdown:
    """Closing commits what is queued; a cancelled caller leaves the writer healthy."""

    async def test_close_drains_the_queue(self, tmp_path: Path) -> None:
        path = tmp_path / "s.db"
        async with SqliteSessionStore.open(path) as store:
            await store.create_session(SessionMeta(id="a"))
            async with trio.open_nursery() as nursery:
                for i in range(20):
                    nursery.start_soon(store.append, "a", [user(i)])
                await trio.testing.wait_all_tasks_blocked()
                store.close()
        conn = sqlite3.connect(path)
        assert conn.execute("SELECT count(*) FROM messages").fetchone() == (20,)
        conn.close()

    async def test_writer_cancelled_mid_stream(self, tmp_path: Path) -> None:
        """Every append that returned is stored; every one refused with StoreClosedError is not."""
        path = tmp_path / "s.db"
        store = SqliteSessionStore(path, StoreConfig(batch_max=8))
        returned: list[int] = []
        refused: list[int] = []

        async def append(i: int) -> None:
            try:
                await store.append("a", [user(i)])
            except StoreClosedError:
                refused.append(i)
            else:
                returned.append(i)

        async with trio.open_nursery() as outer:
            inner_scope = trio.CancelScope()

            async def serve(task_status: trio.TaskStatus[None]) -> None:
                with inner_scope:
                    await store.run(task_status=task_status)

            await outer.start(serve)
            await store.create_session(SessionMeta(id="a"))
            for i in range(300):
                outer.start_soon(append, i)
            while store.statistics().requests < 40:
                await trio.sleep(0.001)
            inner_scope.cancel()
        assert sorted(returned + refused) == list(range(300))
        assert returned and refused
        conn = sqlite3.connect(path)
        stored = {row[0] for row in conn.execute("SELECT content FROM messages")}
        conn.close()
        assert stored == {f"message {i}" for i in returned}

    async def test_cancelled_caller(self, sqlite_store: SqliteSessionStore) -> None:
        await sqlite_store.create_session(SessionMeta(id="a"))
        with trio.CancelScope() as scope:
            scope.cancel()
            await sqlite_store.append("a", [user(0)])
        with trio.move_on_after(0.0005):
            await sqlite_store.append("a", [user(1)])
        await sqlite_store.append("a", [user(2)])
        contents = [m["content"] for m in (await sqlite_store.load("a")).messages]
        assert contents[-1] == "message 2" and "message 0" not in contents

    async def test_run_under_a_supervisor(self, tmp_path: Path) -> None:
        store = SqliteSessionStore(tmp_path / "s.db")
        async with trio.open_nursery() as nursery:
            await nursery.start(store.run)
            await store.create_session(SessionMeta(id="a"))
            store.close()
        with pytest.raises(StoreError):
            await store.load("a")
        write = partial(store.append, "a", [user(0)])
        with pytest.raises(StoreError):
            await write()


class TestReads:
    """Reads run beside writes and stop promptly when cancelled."""

    async def test_cancelled_read_is_interrupted(self, sqlite_store: SqliteSessionStore) -> None:
        def endless(conn: sqlite3.Connection) -> int:
            query = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
            return conn.execute(query).fetchone()[0]

        began = trio.current_time()
        with trio.move_on_after(0.2) as scope:
            await sqlite_store._readers.run(endless)
        assert scope.cancelled_caught
        assert trio.current_time() - began < 2
        await sqlite_store.create_session(SessionMeta(id="a"))
        for _ in range(6):  # every pooled connection still works
            assert (await sqlite_store.get_session("a")).id == "a"
