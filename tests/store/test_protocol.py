"""The SessionStore contract, run against both implementations (SQLite and in-memory)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from store import (
    InvalidQueryError,
    InvalidRecordError,
    MessageNotFoundError,
    SessionExistsError,
    SessionMeta,
    SessionNotFoundError,
    TitleConflictError,
)
from store.codec import encode_raw

ASSISTANT_WITH_CALL = {
    "role": "assistant",
    "content": None,
    "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "terminal", "arguments": '{"command":"ls"}'}}],
    "reasoning": "list files",
    "reasoning_details": [{"type": "thinking", "thinking": "hm", "signature": "c2ln"}],
    "finish_reason": "tool_calls",
}
SHAPES: list[dict[str, Any]] = [
    {"role": "system", "content": "You are Hermes."},
    {"role": "user", "content": [{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": "data:x"}}]},
    ASSISTANT_WITH_CALL,
    {"role": "tool", "tool_call_id": "call_1", "name": "terminal", "content": "a.txt\nb.txt"},
    {"role": "tool", "tool_call_id": "call_2", "tool_name": "read_file", "content": ""},
    {"role": "assistant", "content": "done", "codex_reasoning_items": [{"id": "rs_1", "encrypted_content": "e"}]},
]


async def make(store: Any, sid: str = "s1", **kw: Any) -> None:
    await store.create_session(SessionMeta(id=sid, **kw))


class TestHistory:
    """Appended messages load back exactly, in order, with counters maintained."""

    async def test_every_shape_roundtrips(self, any_store: Any) -> None:
        await make(any_store, model="m", cwd="/w", source="api")
        await any_store.append("s1", SHAPES[:3])
        await any_store.append("s1", SHAPES[3:])
        loaded = await any_store.load("s1")
        assert loaded.messages == SHAPES
        assert loaded.state is None
        assert (loaded.meta.model, loaded.meta.cwd, loaded.meta.source) == ("m", "/w", "api")
        assert (loaded.info.message_count, loaded.info.tool_call_count) == (6, 1)
        assert loaded.info.preview == "look"

    async def test_append_to_unknown_session(self, any_store: Any) -> None:
        with pytest.raises(SessionNotFoundError):
            await any_store.append("nope", [{"role": "user", "content": "x"}])

    async def test_bad_message_stores_nothing_of_the_call(self, any_store: Any) -> None:
        await make(any_store)
        with pytest.raises(InvalidRecordError):
            await any_store.append("s1", [{"role": "user", "content": "ok"}, {"content": "no role"}])
        assert (await any_store.load("s1")).messages == []

    async def test_duplicate_id_and_title(self, any_store: Any) -> None:
        await make(any_store, title="T")
        with pytest.raises(SessionExistsError):
            await make(any_store)
        with pytest.raises(TitleConflictError):
            await make(any_store, "s2", title="T")
        await make(any_store, "s2")
        with pytest.raises(TitleConflictError):
            await any_store.set_title("s2", "T")
        await any_store.set_title("s1", None)
        await any_store.set_title("s2", "T")
        assert (await any_store.get_session("s2")).title == "T"

    async def test_session_ids_reject_the_lineage_separator(self) -> None:
        with pytest.raises(ValueError):
            SessionMeta(id="a#0")


class TestCreateWithFirstWrites:
    """A session created with its first messages and state has them at once; a bad one creates nothing."""

    async def test_messages_and_state(self, any_store: Any) -> None:
        state = {"tools": encode_raw([{"name": "t"}], "tools"), "turns": 0}
        await any_store.create_session(SessionMeta(id="s1", source="api"), messages=SHAPES[:2], state=state)
        loaded = await any_store.load("s1")
        assert (loaded.messages, loaded.state) == (SHAPES[:2], {"tools": [{"name": "t"}], "turns": 0})
        assert loaded.info.message_count == 2
        await any_store.append("s1", [SHAPES[2]])
        assert (await any_store.load("s1")).messages == SHAPES[:3]

    @pytest.mark.parametrize("first", [
        {"messages": [{"role": "user", "content": "ok"}, {"content": "no role"}]},
        {"messages": [{"role": "user", "content": "ok"}], "state": {"x": object()}},
    ])  # fmt: skip
    async def test_all_or_nothing(self, any_store: Any, first: dict[str, Any]) -> None:
        with pytest.raises(InvalidRecordError):
            await any_store.create_session(SessionMeta(id="s1"), **first)
        with pytest.raises(SessionNotFoundError):
            await any_store.load("s1")
        await make(any_store)

    async def test_taken_id_writes_nothing(self, any_store: Any) -> None:
        await make(any_store)
        with pytest.raises(SessionExistsError):
            await any_store.create_session(SessionMeta(id="s1"), messages=[SHAPES[0]], state={"turns": 9})
        loaded = await any_store.load("s1")
        assert (loaded.messages, loaded.state) == ([], None)


class TestCountersWithState:
    """Counters and the state blob updated in one call: both or neither."""

    async def test_both(self, any_store: Any) -> None:
        await make(any_store)
        await any_store.update_counters("s1", tokens_in=7, tokens_out=2, cost=0.5, state={"turns": 1})
        loaded = await any_store.load("s1")
        assert loaded.state == {"turns": 1}
        assert (loaded.info.tokens_in, loaded.info.tokens_out, loaded.info.cost) == (7, 2, 0.5)
        await any_store.update_counters("s1", tokens_in=1)
        assert (await any_store.load("s1")).state == {"turns": 1}, "no state given: the blob stays"

    async def test_neither(self, any_store: Any) -> None:
        await make(any_store)
        with pytest.raises(InvalidRecordError):
            await any_store.update_counters("s1", tokens_in=7, state={"x": object()})
        loaded = await any_store.load("s1")
        assert (loaded.state, loaded.info.tokens_in) == (None, 0)
        with pytest.raises(SessionNotFoundError):
            await any_store.update_counters("zz", tokens_in=1, state={"turns": 1})


class TestStateAndTranscript:
    """State blobs replace each other; transcript records accumulate apart from the history."""

    async def test_state(self, any_store: Any) -> None:
        await make(any_store)
        await any_store.save_state("s1", {"todo": [1], "cwd": "/a"})
        await any_store.save_state("s1", {"todo": [], "cwd": "/b", "high_water": 41})
        assert (await any_store.load("s1")).state == {"todo": [], "cwd": "/b", "high_water": 41}
        with pytest.raises(InvalidRecordError):
            await any_store.save_state("s1", {"x": object()})
        with pytest.raises(SessionNotFoundError):
            await any_store.save_state("zz", {})

    async def test_transcript(self, any_store: Any) -> None:
        await make(any_store)
        await any_store.record_transcript("s1", [{"kind": "rpc", "tool": "web_search"}])
        await any_store.record_transcript("s1", [{"kind": "rpc", "tool": "read_file"}, {"kind": "rpc", "tool": "patch"}])
        records = await any_store.load_transcript("s1")
        assert [r.record["tool"] for r in records] == ["web_search", "read_file", "patch"]
        assert (await any_store.load("s1")).messages == []

    async def test_transcript_records_are_written_all_or_none(self, any_store: Any) -> None:
        """One refused record keeps the whole batch out; an empty batch writes nothing."""
        await make(any_store)
        with pytest.raises(InvalidRecordError):
            await any_store.record_transcript("s1", [{"kind": "rpc"}, {"kind": object()}])
        await any_store.record_transcript("s1", [])
        assert await any_store.load_transcript("s1") == []
        with pytest.raises(SessionNotFoundError):
            await any_store.record_transcript("zz", [{"kind": "rpc"}])


class TestCountersAndEnd:
    """Usage adds up; ending sets ended_at and end_reason."""

    async def test_counters(self, any_store: Any) -> None:
        await make(any_store)
        await any_store.update_counters("s1", tokens_in=10, tokens_out=5, cost=0.5)
        await any_store.update_counters("s1", tokens_in=1, tool_calls=2, cost=0.25)
        info = await any_store.get_session("s1")
        assert (info.tokens_in, info.tokens_out, info.tool_call_count, info.cost) == (11, 5, 2, 0.75)
        with pytest.raises((InvalidQueryError, InvalidRecordError)):
            await any_store.update_counters("s1", tokens_in=-1)

    async def test_end(self, any_store: Any) -> None:
        await make(any_store)
        await any_store.end_session("s1", "user_exit")
        info = await any_store.get_session("s1")
        assert info.end_reason == "user_exit" and info.ended_at is not None


class TestRecordEnded:
    """A session that has already ended is stored in one call: row, history, state, counters and end, or nothing."""

    async def test_everything_at_once(self, any_store: Any) -> None:
        state = {"tools": encode_raw([{"name": "t"}], "tools"), "turns": 1}
        await any_store.record_session(
            SessionMeta(id="s1", source="api"), messages=SHAPES[:3], state=state, reason="api completion done",
            tokens_in=40, tokens_out=4, cost=0.25,
        )
        loaded = await any_store.load("s1")
        assert (loaded.messages, loaded.state) == (SHAPES[:3], {"tools": [{"name": "t"}], "turns": 1})
        info = loaded.info
        assert (info.source, info.tokens_in, info.tokens_out, info.cost, info.tool_call_count) == ("api", 40, 4, 0.25, 1)
        assert info.end_reason == "api completion done" and info.ended_at is not None

    async def test_its_own_end_time(self, any_store: Any) -> None:
        """A session brought over from elsewhere keeps when it ended: its end, last activity and messages."""
        await any_store.record_session(
            SessionMeta(id="s1", started_at=1_000.0), messages=SHAPES[:1], state=None, reason="user_exit", ended_at=1_600.0,
        )
        info = await any_store.get_session("s1")
        assert (info.started_at, info.ended_at, info.last_active) == (1_000.0, 1_600.0, 1_600.0)
        excerpt = await any_store.read_session("s1")
        assert [message.created_at for message in excerpt.head] == [1_600.0]

    async def test_nothing_when_refused(self, any_store: Any) -> None:
        with pytest.raises(InvalidRecordError):
            await any_store.record_session(SessionMeta(id="s1"), messages=[{"content": "no role"}], state=None, reason="x")
        with pytest.raises(InvalidRecordError):
            await any_store.record_session(SessionMeta(id="s1"), messages=[], state=None, reason="x", tokens_in=-1)
        with pytest.raises(SessionNotFoundError):
            await any_store.load("s1")
        await make(any_store)
        with pytest.raises(SessionExistsError):
            await any_store.record_session(SessionMeta(id="s1"), messages=[SHAPES[0]], state=None, reason="x")
        assert (await any_store.load("s1")).messages == []


class TestCompaction:
    """Compression keeps the id, swaps the live history and keeps the old one searchable."""

    async def test_compact(self, any_store: Any) -> None:
        await make(any_store)
        await any_store.append("s1", [{"role": "user", "content": "first zebra"}, {"role": "assistant", "content": "ok"}])
        epoch = await any_store.compact("s1", [{"role": "user", "content": "[summary] zebra talk"}])
        assert epoch == 1
        await any_store.append("s1", [{"role": "assistant", "content": "after"}])
        loaded = await any_store.load("s1")
        assert loaded.messages == [{"role": "user", "content": "[summary] zebra talk"}, {"role": "assistant", "content": "after"}]
        assert loaded.info.epoch == 1 and loaded.info.id == "s1"
        # Lineage rows stay internal.
        assert [i.id for i in await any_store.list_sessions()] == ["s1"]
        excerpt = await any_store.read_session("s1")
        assert [m.message["content"] for m in excerpt.head][0] == "first zebra"
        # The archived epoch is searchable even from the session itself; the live epoch is not.
        found = await any_store.search("zebra", current_session_id="s1")
        assert [h.snippet for h in found[0].hits] == ["first zebra"]


class TestListingAndReading:
    """list, browse, read (head + tail) and scroll."""

    async def test_read_head_tail(self, any_store: Any) -> None:
        await make(any_store)
        await any_store.append("s1", [{"role": "user", "content": f"m{i}"} for i in range(40)])
        excerpt = await any_store.read_session("s1")
        assert [m.message["content"] for m in excerpt.head] == [f"m{i}" for i in range(20)]
        assert [m.message["content"] for m in excerpt.tail] == [f"m{i}" for i in range(30, 40)]
        assert excerpt.omitted == 10
        short = await any_store.read_session("s1", head=30, tail=30)
        assert (len(short.head), len(short.tail), short.omitted) == (30, 10, 0)

    async def test_scroll(self, any_store: Any) -> None:
        await make(any_store)
        await make(any_store, "other")
        await any_store.append("other", [{"role": "user", "content": "noise"}])
        await any_store.append("s1", [{"role": "user", "content": f"m{i}"} for i in range(10)])
        middle = (await any_store.read_session("s1")).head[5]
        around = await any_store.scroll(middle.id, before=2, after=1)
        assert [m.message["content"] for m in around] == ["m3", "m4", "m5", "m6"]
        with pytest.raises(MessageNotFoundError):
            await any_store.scroll(10_000)

    async def test_list_and_browse(self, any_store: Any) -> None:
        await make(any_store, "old", started_at=1.0, source="cli")
        await make(any_store, "new", started_at=2.0, source="api")
        await make(any_store, "child", started_at=3.0, parent_session_id="new", source="subagent")
        await any_store.append("old", [{"role": "user", "content": "touch"}])
        assert [i.id for i in await any_store.list_sessions()] == ["child", "new", "old"]
        assert [i.id for i in await any_store.list_sessions(source="api")] == ["new"]
        assert [i.id for i in await any_store.list_sessions(limit=1, offset=1)] == ["new"]
        browsed = await any_store.browse(exclude_session_id="new")
        assert [i.id for i in browsed] == ["old"] and browsed[0].preview == "touch"


class TestExportAndDelete:
    """Export writes JSON lines; delete removes content and leaves a tombstone."""

    async def test_export(self, any_store: Any) -> None:
        await make(any_store)
        await any_store.append("s1", SHAPES)
        await any_store.record_transcript("s1", [{"kind": "rpc"}])
        lines = [json.loads(line) for line in (await any_store.export_jsonl("s1")).splitlines()]
        assert [line["type"] for line in lines] == ["session"] + ["message"] * len(SHAPES) + ["transcript"]
        assert [line["message"] for line in lines[1:-1]] == SHAPES

    async def test_delete(self, any_store: Any) -> None:
        await make(any_store, title="gone")
        await any_store.append("s1", [{"role": "user", "content": "secret zebra"}])
        await any_store.delete_session("s1")
        with pytest.raises(SessionNotFoundError):
            await any_store.load("s1")
        assert await any_store.search("zebra") == []
        assert await any_store.list_sessions() == []
        with pytest.raises(SessionExistsError):
            await make(any_store)
        await make(any_store, "s2", title="gone")  # the title is free again
        with pytest.raises(SessionNotFoundError):
            await any_store.delete_session("s1")
