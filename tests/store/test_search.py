"""Search over both relational stores' indexes (SQLite's FTS5, PostgreSQL's tsvector and pg_trgm): words,
tool calls and output, CJK, substrings, filters, grouping."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest

from store import InvalidQueryError, SessionMeta, SqliteSessionStore


async def session(store: Any, sid: str, *messages: dict[str, Any], **kw: Any) -> None:
    await store.create_session(SessionMeta(id=sid, **kw))
    await store.append(sid, list(messages))


def ids(found: list[Any]) -> list[str]:
    return [m.session.id for m in found]


def candidates(monkeypatch: pytest.MonkeyPatch, n: int) -> None:
    """Bound the ranked candidates of both stores' searches to ``n``."""
    monkeypatch.setattr("store.sqlite.search.CANDIDATES", n)
    monkeypatch.setattr("store.postgres.search.CANDIDATES", n)


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


class TestWords:
    """FTS5 word search over content and tool calls, with the user's syntax or a safe fallback."""

    async def test_content_and_ranking(self, sql_store: Any) -> None:
        await session(sql_store, "a", user("deploying kubernetes clusters"), {"role": "assistant", "content": "ok"})
        await session(sql_store, "b", user("kubernetes kubernetes kubernetes everywhere"))
        await session(sql_store, "c", user("nothing relevant"))
        found = await sql_store.search("kubernetes")
        assert ids(found) == ["b", "a"]
        assert found[1].hits[0].snippet == "deploying kubernetes clusters"

    async def test_diacritics_phrase_prefix_and_boolean(self, sql_store: Any) -> None:
        await session(sql_store, "a", user("Café Zürich meeting notes"))
        await session(sql_store, "b", user("zurich airport transfer"))
        assert sorted(ids(await sql_store.search("zurich"))) == ["a", "b"]
        assert ids(await sql_store.search('"meeting notes"')) == ["a"]
        assert ids(await sql_store.search("airp*")) == ["b"]
        assert ids(await sql_store.search("zurich NOT airport")) == ["a"]

    async def test_broken_syntax_falls_back_to_words(self, sql_store: Any) -> None:
        await session(sql_store, "a", user("see config.yaml for the key"))
        assert ids(await sql_store.search('config.yaml "unbalanced')) == []
        assert ids(await sql_store.search("config.yaml")) == ["a"]
        assert ids(await sql_store.search("body: config")) == ["a"]
        assert await sql_store.search("nosuchcolumn: config") == []

    async def test_tool_calls_and_tool_output(self, sql_store: Any) -> None:
        call = {"id": "c1", "type": "function", "function": {"name": "terminal", "arguments": '{"command": "pg_dump prod"}'}}
        await session(
            sql_store,
            "a",
            user("back it up"),
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "name": "terminal", "content": "dump written to backup.sql.gz"},
        )
        found = await sql_store.search("pg_dump")
        assert ids(found) == ["a"] and "pg_dump prod" in found[0].hits[0].snippet
        # Tool output is searched only when tools are asked for.
        assert await sql_store.search("backup.sql.gz") == []
        found = await sql_store.search("backup.sql.gz", roles=("tool",))
        assert found[0].hits[0].tool_name == "terminal" and found[0].hits[0].role == "tool"

    async def test_list_content_is_indexed_by_its_text_parts(self, sql_store: Any) -> None:
        content = [{"type": "text", "text": "photo of a heron"}, {"type": "image_url", "image_url": {"url": "data:zzz"}}]
        await session(sql_store, "a", {"role": "user", "content": content})
        assert ids(await sql_store.search("heron")) == ["a"]
        assert await sql_store.search("image_url") == []


class TestSubstrings:
    """The trigram index finds CJK text and word fragments."""

    async def test_cjk(self, sql_store: Any) -> None:
        await session(sql_store, "ja", user("明日は東京タワーに行きます"))
        await session(sql_store, "zh", user("我们明天去北京开会"))
        assert ids(await sql_store.search("東京タワー")) == ["ja"]
        assert ids(await sql_store.search("北京")) == ["zh"]  # two characters: below trigram length
        assert ids(await sql_store.search("明天 开会")) == ["zh"]
        assert sorted(ids(await sql_store.search("明"))) == ["ja", "zh"]

    async def test_fragment_of_a_word(self, sql_store: Any) -> None:
        await session(sql_store, "a", user("edit the Dockerfile then rebuild"))
        assert ids(await sql_store.search("ockerfi")) == ["a"]
        assert ids(await sql_store.search("ockerfi rebui")) == ["a"]
        assert await sql_store.search("ockerfi missing") == []

    async def test_like_wildcards_are_literal(self, sql_store: Any) -> None:
        await session(sql_store, "a", user("100% done"))
        await session(sql_store, "b", user("1000 items"))
        assert ids(await sql_store.search("0%")) == ["a"]


class TestFiltersAndGrouping:
    """Role, date and source filters; sessions grouped; the current session never crowds others out."""

    async def test_current_session_does_not_crowd_out_older_ones(self, sql_store: Any) -> None:
        await session(sql_store, "old", user("the falcon project plan"))
        await session(sql_store, "now", *[user(f"falcon falcon falcon {i}") for i in range(50)])
        found = await sql_store.search("falcon", limit=1, current_session_id="now")
        assert ids(found) == ["old"]
        # Another session with many hits still takes one slot, with at most three hits.
        found = await sql_store.search("falcon", limit=2)
        assert ids(found) == ["now", "old"] and len(found[0].hits) == 3

    async def test_roles_dates_source(self, sql_store: Any) -> None:
        await session(sql_store, "a", user("gamma rules"), source="cli")
        await session(sql_store, "b", {"role": "assistant", "content": "gamma answer"}, source="api")
        await session(sql_store, "c", {"role": "tool", "content": "gamma output", "tool_call_id": "t1"}, source="cli")
        assert sorted(ids(await sql_store.search("gamma"))) == ["a", "b"]
        assert ids(await sql_store.search("gamma", roles=("tool",))) == ["c"]
        assert ids(await sql_store.search("gamma", roles=("tool", "assistant"), source="cli")) == ["c"]
        when = (await sql_store.read_session("b")).head[0].created_at
        assert ids(await sql_store.search("gamma", roles=("assistant",), since=when - 1, until=when + 1)) == ["b"]
        assert await sql_store.search("gamma", since=when + 1) == []

    @pytest.mark.parametrize(
        "kwargs",
        [
            {"query": "x", "roles": ("system",)},
            {"query": "  "},
            {"query": "x", "limit": 0},
            {"query": "x", "limit": 11},
            {"query": "x", "roles": ("robot",)},
            {"query": "x", "roles": ()},
            {"query": "x", "since": 2.0, "until": 1.0},
        ],
    )
    async def test_bad_arguments(self, sql_store: Any, kwargs: dict[str, Any]) -> None:
        with pytest.raises(InvalidQueryError):
            await sql_store.search(**kwargs)


class TestBoundedRanking:
    """A word matching more messages than CANDIDATES is ranked among its most recent matches."""

    async def test_common_word(self, sql_store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
        candidates(monkeypatch, 4)
        await session(sql_store, "old", user("common common common common"))
        await session(sql_store, "mid", *[user(f"common {i}") for i in range(4)])
        await session(sql_store, "new", user("common"))
        # The strongest match is too old to be among the 4 newest candidates.
        assert ids(await sql_store.search("common", limit=10)) == ["new", "mid"]
        candidates(monkeypatch, 1000)
        assert ids(await sql_store.search("common", limit=10))[0] == "old"


    async def test_stop_word_query_is_ordered_by_recency(
        self, sql_store: Any, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        candidates(monkeypatch, 4)
        await session(sql_store, "strong", user("the the the the"))
        await session(sql_store, "a", user("the cat"))
        await session(sql_store, "b", user("the dog"))
        await session(sql_store, "c", user("the end"))
        # "the" is in every recent message: recency decides, newest first.
        assert ids(await sql_store.search("the", limit=2)) == ["c", "b"]
        # Once matches are sparse among recent messages, bm25 ranks the candidates again.
        await session(sql_store, "d", *[user(f"filler {i}") for i in range(20)])
        assert ids(await sql_store.search("the", limit=1)) == ["strong"]


class TestIndexSync:
    """The triggers and the batched indexing keep both indexes equal to the messages, through deletes."""

    @pytest.mark.parametrize("indexed_first", [True, False], ids=["indexed", "still-queued"])
    async def test_integrity_after_delete(self, sqlite_store: SqliteSessionStore, indexed_first: bool) -> None:
        await session(sqlite_store, "a", user("alpha beta"), {"role": "assistant", "content": [{"type": "text", "text": "gamma"}]})
        await session(sqlite_store, "b", user("alpha delta"))
        if indexed_first:
            assert sorted(ids(await sqlite_store.search("alpha"))) == ["a", "b"]
        await sqlite_store.delete_session("a")
        assert ids(await sqlite_store.search("alpha")) == ["b"]
        conn = sqlite3.connect(sqlite_store.path)
        try:
            assert conn.execute("SELECT count(*) FROM fts_pending").fetchone() == (0,)
            for table in ("messages_fts", "messages_tri"):
                conn.execute(f"INSERT INTO {table}({table}) VALUES ('integrity-check')")
                assert conn.execute(f"SELECT count(*) FROM {table}_docsize").fetchone() == (1,)
                assert conn.execute(f"SELECT rowid FROM {table} WHERE {table} MATCH 'alpha'").fetchall() == [(3,)]
                assert conn.execute(f"SELECT rowid FROM {table} WHERE {table} MATCH 'gamma'").fetchall() == []
        finally:
            conn.close()
