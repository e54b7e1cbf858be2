"""Saving a session's state: every change is written, an unchanged state is not written again, and
sessions offered the same tools share one frozen list (encoded once)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs

from actors.session.state import save_state
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
