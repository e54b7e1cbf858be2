"""The in-memory store behaves like the SQLite one: random operation sequences give the same observable results."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import trio
from hypothesis import example, given, settings
from hypothesis import strategies as st

from store import InMemorySessionStore, SessionMeta, SqliteSessionStore, StoreError

from .strategies import messages

SESSION_IDS = ["a", "b", "c"]
operations = st.lists(
    st.one_of(
        st.tuples(st.just("create"), st.sampled_from(SESSION_IDS), st.sampled_from([None, "T1", "T2"])),
        st.tuples(st.just("append"), st.sampled_from(SESSION_IDS), st.lists(messages, max_size=3)),
        st.tuples(st.just("compact"), st.sampled_from(SESSION_IDS), st.lists(messages, max_size=2)),
        st.tuples(st.just("state"), st.sampled_from(SESSION_IDS), st.dictionaries(st.text(max_size=5), st.integers())),
        st.tuples(st.just("end"), st.sampled_from(SESSION_IDS), st.sampled_from(["done", "error"])),
        st.tuples(st.just("delete"), st.sampled_from(SESSION_IDS), st.none()),
    ),
    max_size=12,
)


async def apply(store: Any, ops: list[tuple[str, str, Any]]) -> list[Any]:
    """Run the operations; return what each one and the final reads observed."""
    seen: list[Any] = []
    for index, (op, sid, arg) in enumerate(ops):
        try:
            if op == "create":
                seen.append(await store.create_session(SessionMeta(id=sid, title=arg, started_at=float(index))))
            elif op == "append":
                seen.append(await store.append(sid, arg))
            elif op == "compact":
                seen.append(await store.compact(sid, arg))
            elif op == "state":
                seen.append(await store.save_state(sid, arg))
            elif op == "end":
                seen.append(await store.end_session(sid, arg))
            else:
                seen.append(await store.delete_session(sid))
        except StoreError as exc:
            seen.append(type(exc).__name__)
    for sid in SESSION_IDS:
        try:
            loaded = await store.load(sid)
            excerpt = await store.read_session(sid, head=3, tail=2)
            info = loaded.info
            seen.append(
                (
                    loaded.messages,
                    loaded.state,
                    [m.message for m in excerpt.head + excerpt.tail],
                    excerpt.omitted,
                    (info.title, info.epoch, info.message_count, info.tool_call_count, info.end_reason, info.preview),
                )
            )
        except StoreError as exc:
            seen.append(type(exc).__name__)
    seen.append([i.id for i in await store.list_sessions()])
    return seen


class TestEquivalence:
    """Both implementations agree on results and on errors."""

    @given(operations)
    # Found by Hypothesis: SQLite's substr stops at a NUL, so the preview must end there in every store.
    @example([("create", "b", None), ("append", "b", [{"role": "user", "content": "\x00"}])])
    @example([("create", "a", None), ("append", "a", [{"role": "user", "content": "ab\x00cd"}])])
    @settings(max_examples=40, deadline=None)
    def test_same_observations(self, ops: list[tuple[str, str, Any]]) -> None:
        async def both() -> tuple[list[Any], list[Any]]:
            with tempfile.TemporaryDirectory() as tmp:
                async with SqliteSessionStore.open(Path(tmp) / "state.db") as sqlite_store:
                    from_sqlite = await apply(sqlite_store, ops)
            return from_sqlite, await apply(InMemorySessionStore(), ops)

        from_sqlite, from_memory = trio.run(both)
        assert from_sqlite == from_memory
