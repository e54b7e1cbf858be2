"""Large JSON values of saved states (a session's tool definitions) are stored once, and loaded back in place."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

import pytest

from messages.raw_json import RawJson
from store import SessionExistsError, SessionMeta, SqliteSessionStore
from store.shared_json import SHARED_MIN_CHARS, SharedJsonMissing, split_shared

TOOLS = [{"type": "function", "function": {"name": f"tool_{i}", "description": "d" * 100}} for i in range(40)]


def raw(value: Any) -> RawJson:
    return RawJson(json.dumps(value, separators=(",", ":"), ensure_ascii=False))


def state(tools: Any = TOOLS, turns: int = 0) -> dict[str, Any]:
    return {"tools": raw(tools), "tool_names": ["a"], "turns": turns}


def rows(store: SqliteSessionStore, sql: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(store.path)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


class TestRoundTrip:
    """What a store's users see: the state they saved, whatever is shared underneath (SQLite and PostgreSQL)."""

    async def test_sessions_with_the_same_tools_load_them_back(self, sql_store: Any) -> None:
        await sql_store.create_session(SessionMeta(id="a"), state=state())
        await sql_store.create_session(SessionMeta(id="b"))
        await sql_store.update_counters("b", tokens_in=5, state=state(turns=1))
        await sql_store.save_state("a", state(turns=2))
        for sid, turns in (("a", 2), ("b", 1)):
            loaded = (await sql_store.load(sid)).state
            assert loaded == {"tools": TOOLS, "tool_names": ["a"], "turns": turns}

    async def test_a_failed_write_does_not_count_as_storing_a_value(self, sql_store: Any) -> None:
        """A value first sent with a write that failed is sent again with the next one."""
        other = [{"type": "function", "function": {"name": "x", "description": "e" * SHARED_MIN_CHARS}}]
        await sql_store.create_session(SessionMeta(id="a"))
        with pytest.raises(SessionExistsError):
            await sql_store.create_session(SessionMeta(id="a"), state=state(other))
        await sql_store.save_state("a", state(other))
        assert (await sql_store.load("a")).state == {"tools": other, "tool_names": ["a"], "turns": 0}


class TestStoredOnce:
    """On disk: one copy of each large value; small ones inline; states of older releases read as they are."""

    async def test_one_copy(self, sqlite_store: SqliteSessionStore) -> None:
        for sid in ("a", "b", "c"):
            await sqlite_store.create_session(SessionMeta(id=sid), state=state())
            await sqlite_store.update_counters(sid, tokens_in=1, state=state(turns=1))
        assert rows(sqlite_store, "SELECT count(*) FROM shared_json") == [(1,)]
        sizes = rows(sqlite_store, "SELECT length(state) FROM session_state")
        assert len(sizes) == 3 and all(size < 200 for (size,) in sizes)

    async def test_small_values_stay_inline(self, sqlite_store: SqliteSessionStore) -> None:
        await sqlite_store.create_session(SessionMeta(id="a"), state=state(TOOLS[:1]))
        assert rows(sqlite_store, "SELECT count(*) FROM shared_json") == [(0,)]
        assert (await sqlite_store.load("a")).state == {"tools": TOOLS[:1], "tool_names": ["a"], "turns": 0}

    async def test_an_inline_state_of_an_earlier_release_loads(self, sqlite_store: SqliteSessionStore) -> None:
        await sqlite_store.create_session(SessionMeta(id="old"))
        conn = sqlite3.connect(sqlite_store.path, isolation_level=None)
        conn.execute(
            "INSERT INTO session_state (session_id, state, updated_at) VALUES ('old', ?, 1)",
            (json.dumps({"tools": TOOLS, "turns": 7}),),
        )
        conn.close()
        assert (await sqlite_store.load("old")).state == {"tools": TOOLS, "turns": 7}

    async def test_a_missing_value_is_an_error_that_names_it(self, sqlite_store: SqliteSessionStore) -> None:
        await sqlite_store.create_session(SessionMeta(id="a"), state=state())
        conn = sqlite3.connect(sqlite_store.path, isolation_level=None)
        conn.execute("DELETE FROM shared_json")
        conn.close()
        with pytest.raises(SharedJsonMissing, match="'tools' refers to shared JSON"):
            await sqlite_store.load("a")


def test_a_state_with_nothing_to_share_is_not_copied() -> None:
    small = {"tools": raw([]), "turns": 1}
    inline, shared = split_shared(small)
    assert inline is small and shared == {}
