"""Saving a session's state: every change is written, an unchanged state is not written again, and
sessions offered the same tools share one frozen list (encoded once)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio

from actors.session.saved import SavedProcess, SavedShell, SavedState, SavedStateError, dump_saved, load_saved
from actors.session.state import save_state
from config.store import StoreConfig
from messages.chat import (
    AssistantMessage, HumanMessage, ImagePart, SystemMessage, TextPart, ToolCall, ToolMessage, message_from_dict, message_to_dict,
)
from providers.types import Usage
from store import SqliteSessionStore
from store.codec import dump_json, encode_message
from store.memory import InMemorySessionStore
from store.records import SessionMeta
from tests.session.harness import Harness, open_harness, run_turn


class CountingStore(InMemorySessionStore):
    """The in-memory store, counting the states it is asked to write (with a new session, or saved)."""

    def __init__(self) -> None:
        super().__init__()
        self.saves: list[str] = []

    async def create_session(self, meta: SessionMeta, **first: Any) -> None:
        if first.get("state") is not None:
            self.saves.append(meta.id)
        await super().create_session(meta, **first)

    async def save_state(self, session_id: str, state: dict[str, Any]) -> None:
        self.saves.append(session_id)
        await super().save_state(session_id, state)

    async def update_counters(self, session_id: str, **counters: Any) -> None:
        if counters.get("state") is not None:
            self.saves.append(session_id)
        await super().update_counters(session_id, **counters)


class SlowCountersStore(InMemorySessionStore):
    """The in-memory store, letting every other task run many times over before a turn's counters are
    written (as a database's commit lets the event loop go on)."""

    async def update_counters(self, session_id: str, **counters: Any) -> None:
        for _ in range(50):
            await trio.sleep(0)
        await super().update_counters(session_id, **counters)


def counting(h: Harness) -> CountingStore:
    """Give the harness's sessions a counting store from now on."""
    store = CountingStore()
    h.deps = attrs.evolve(h.deps, store=store)
    return store


async def stored_state(store: InMemorySessionStore, session_id: str) -> dict[str, Any]:
    loaded = await store.load(session_id)
    assert loaded.state is not None
    return loaded.state


class TestStateSaves:
    """What reaches the store when a session saves its state."""

    async def test_stop_after_turn_writes_nothing_new(self, tmp_path: Path) -> None:
        """Created (one save), one turn (one save, with its usage), stopped right after: no third write of
        the same state."""
        async with open_harness(tmp_path) as h:
            store = counting(h)
            handle, sub, sid = await h.start_session()
            h.provider.push({"text": "hello", "usage": {"prompt_tokens": 30, "completion_tokens": 3}})
            await run_turn(handle, sub, "hi")
            sub.close()
            await h.system.root.terminate_child(f"session:{sid}", "test over")
            assert store.saves == [sid, sid]
            saved = await stored_state(store, sid)
            assert saved["turns"] == 1 and saved["usage"]["prompt_tokens"] == 30
            info = await store.get_session(sid)
            assert (info.tokens_in, info.tokens_out) == (30, 3)

    async def test_a_finished_turn_is_in_the_store_when_it_is_said_finished(self, tmp_path: Path) -> None:
        """Read at once on TurnFinished, the store has the turn's tokens, its history and TurnFinished's
        event number (a client listing sessions, a restarted daemon)."""
        store = SlowCountersStore()
        async with open_harness(tmp_path, store=store) as h:
            handle, sub, sid = await h.start_session()
            h.provider.push({"text": "hello", "usage": {"prompt_tokens": 30, "completion_tokens": 3}})
            finished, _ = await run_turn(handle, sub, "hi")
            info = await store.get_session(sid)
            assert (info.tokens_in, info.tokens_out) == (30, 3)
            saved = await stored_state(store, sid)
            assert saved["turns"] == 1 and saved["event_seq"] == finished.seq
            loaded = await store.load(sid)
            assert [m["role"] for m in loaded.messages][-2:] == ["user", "assistant"]
            sub.close()

    async def test_a_change_in_place_is_saved(self, tmp_path: Path) -> None:
        """The shell's environment changed in place after a save is written at the next save."""
        async with open_harness(tmp_path) as h:
            store = counting(h)
            handle, sub, sid = await h.start_session()
            actor = handle._actor
            state = actor.durable
            await save_state(h.deps, sid, state, event_seq=actor.hub.seq, processes=())
            before = len(store.saves)
            await save_state(h.deps, sid, state, event_seq=actor.hub.seq, processes=())
            assert len(store.saves) == before, "the same state again is not written"
            state.shell.env["FOO"] = "bar"
            await save_state(h.deps, sid, state, event_seq=actor.hub.seq, processes=())
            assert len(store.saves) == before + 1
            assert (await stored_state(store, sid))["shell"]["env"] == {"FOO": "bar"}
            sub.close()

    async def test_sessions_share_the_frozen_tool_list(self, tmp_path: Path) -> None:
        """Two sessions offered the same tools share one FrozenTools; the saved state holds its definitions."""
        async with open_harness(tmp_path) as h:
            store = counting(h)
            first, sub1, sid1 = await h.start_session()
            second, sub2, sid2 = await h.start_session()
            tools = first._actor.durable.tools
            assert second._actor.durable.tools is tools
            assert tools.names == {d["function"]["name"] for d in tools.definitions} != set()
            for sid in (sid1, sid2):
                saved = await stored_state(store, sid)
                assert saved["tools"] == json.loads(json.dumps(tools.definitions))
                assert saved["tool_names"] == sorted(tools.names)
            sub1.close()
            sub2.close()


# A state exactly as the daemon wrote it before the state was typed (the text of its SQLite column).
TODAY_STATE = (
    '{"options":{"cwd":"/work/project","model":"m-1","provider":null,"base_url":null,"api_mode":null,"source":"cli",'
    '"title":null,"interactive":true,"toolsets":["terminal","file"],"blocked_tools":["a","b"],"max_iterations":null,'
    '"parent_session_id":null,"depth":0,"system_prompt":null,"load_context_files":true,"use_memory":true,'
    '"auto_approve":false,"sandbox":"workspace","limits":{"memory_mb":512},"one_shot":false,'
    '"turn_time_budget_seconds":null,"turn_token_budget":null,"cron_approvals":null},'
    '"tools":[{"type":"function","function":{"name":"terminal","description":"Run","parameters":{"type":"object"}}}],'
    '"tool_names":["terminal"],"shell":{"cwd":"/work/project/src","env":{"FOO":"bar"},"passthrough":[]},'
    '"todo":[{"id":"1","content":"write tests","status":"in_progress"}],"event_seq":42,"turns":3,'
    '"usage":{"prompt_tokens":100,"completion_tokens":20,"cache_read_tokens":5,"cache_write_tokens":0,"reasoning_tokens":7},'
    '"api_calls":4,"cost_usd":0.0123,"compression":{"summary":"earlier","count":1},"approvals":["rm -rf build"],'
    '"processes":[{"id":"proc_1","command":"sleep 100","running":true},{"id":"proc_2","command":"true","running":false}]}'
)


# Messages as the daemon stored them before the history was typed (a provider's reply with its extras included).
TODAY_MESSAGES: list[dict[str, Any]] = [
    {"role": "system", "content": "prompt"},
    {"role": "user", "content": [{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA"}}]},
    {"role": "assistant", "content": None, "reasoning": "why",
     "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "terminal", "arguments": '{"command":"ls"}'}, "extra_content": {"g": 1}}],
     "anthropic_content": [{"type": "thinking", "thinking": "t", "signature": "s"}]},
    {"role": "tool", "tool_call_id": "c1", "name": "terminal", "content": "a b"},
    {"role": "assistant", "content": "hello"},
]


class TestSavedStateFormat:
    """The typed saved state reads and writes the JSON the daemon has always stored."""

    def test_todays_state_is_read_typed_and_written_back_the_same(self) -> None:
        saved = load_saved(json.loads(TODAY_STATE))
        assert saved.options is not None and saved.options.blocked_tools == {"a", "b"}
        assert saved.options.toolsets == ("terminal", "file") and saved.options.sandbox == "workspace"
        assert saved.usage == Usage(100, 20, 5, 0, 7) and saved.cost_usd == 0.0123
        assert saved.shell == SavedShell("/work/project/src", {"FOO": "bar"}, [])
        assert saved.processes == [SavedProcess("proc_1", "sleep 100", True), SavedProcess("proc_2", "true", False)]
        assert dump_json(dump_saved(saved), "state") == TODAY_STATE

    def test_an_older_state_takes_defaults(self) -> None:
        """Keys missing or null (an older daemon's state) take their defaults; a damaged cost reads as unknown."""
        saved = load_saved({"turns": None, "usage": {"prompt_tokens": 9}, "cost_usd": "a lot", "tools": None})
        assert saved == SavedState(usage=Usage(prompt_tokens=9))

    def test_a_value_of_the_wrong_type_is_a_named_error(self) -> None:
        with pytest.raises(SavedStateError, match=r"state\.processes"):
            load_saved({"processes": [{"command": "x"}]})

    async def test_a_session_resumes_from_a_state_row_in_todays_format(self, tmp_path: Path) -> None:
        """A SQLite store holding today's state and messages: the session resumes with every saved value,
        and says the background process that was running is gone."""
        async with open_harness(tmp_path) as h, SqliteSessionStore.open(tmp_path / "state.db", StoreConfig()) as store:
            h.deps = attrs.evolve(h.deps, store=store)
            state = json.loads(TODAY_STATE)
            state["options"] = h.options().to_state()
            await store.create_session(SessionMeta(id="old1", cwd=str(h.workdir)), messages=TODAY_MESSAGES, state=state)
            handle = await h.spawn_session("old1", None)
            durable = handle._actor.durable
            assert durable.history == [
                SystemMessage("prompt"),
                HumanMessage((TextPart("look"), ImagePart("data:image/png;base64,AA"))),
                AssistantMessage(None, (ToolCall("c1", "terminal", '{"command":"ls"}', {"extra_content": {"g": 1}}),), "why",
                                 {"anthropic_content": [{"type": "thinking", "thinking": "t", "signature": "s"}]}),
                ToolMessage("c1", "a b", "terminal"),
                AssistantMessage("hello"),
            ]
            assert (await store.load("old1")).messages == TODAY_MESSAGES, "a valid history is not rewritten"
            assert (durable.turns, durable.api_calls, durable.cost_usd, durable.event_seq) == (3, 4, 0.0123, 42)
            assert durable.usage == Usage(100, 20, 5, 0, 7) and durable.shell.cwd == "/work/project/src"
            assert durable.tools.names == {"terminal"} and durable.compression == {"summary": "earlier", "count": 1}
            assert [item["content"] for item in durable.todo.to_dicts()] == ["write tests"]
            assert h.deps.approvals is not None and h.deps.approvals.for_session("old1").snapshot() == ["rm -rf build"]
            [note] = durable.lost_process_notes()
            assert "proc_1" in note and "sleep 100" in note
            await h.system.root.terminate_child("session:old1", "test over")

    def test_typed_messages_are_stored_in_todays_columns(self) -> None:
        """What the session writes for a message is what the daemon wrote for it before (column for column)."""
        for message in TODAY_MESSAGES:
            assert encode_message(message_to_dict(message_from_dict(message))) == encode_message(message)

    async def test_a_stored_message_that_is_not_one_is_dropped_and_logged(self, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
        async with open_harness(tmp_path) as h:
            await h.deps.store.create_session(SessionMeta(id="odd1", cwd=str(h.workdir)), messages=[
                {"role": "system", "content": "prompt"}, {"role": "user", "content": "hi"}, {"role": "robot", "content": "beep"},
                {"role": "assistant", "content": "hello"},
            ], state=None)
            handle = await h.spawn_session("odd1", None)
            assert [m.role for m in handle._actor.durable.history] == ["system", "user", "assistant"]
            assert "stored message 2 dropped: unknown message role 'robot'" in caplog.text
            assert [m["role"] for m in (await h.deps.store.load("odd1")).messages] == ["system", "user", "assistant"]
            await h.system.root.terminate_child("session:odd1", "test over")

    async def test_a_damaged_state_is_logged_and_the_history_resumes(self, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
        async with open_harness(tmp_path) as h:
            await h.deps.store.create_session(SessionMeta(id="bad1", cwd=str(h.workdir)), messages=[
                {"role": "system", "content": "prompt"}, {"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"},
            ], state={"turns": "three"})
            handle = await h.spawn_session("bad1", None)
            assert handle._actor.durable.turns == 0 and len(handle._actor.durable.history) == 3
            assert "saved state unreadable: invalid value for type, expected int @ state.turns" in caplog.text
            await h.system.root.terminate_child("session:bad1", "test over")
