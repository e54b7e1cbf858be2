"""Hostile text in the store: written, read back, searched and exported, in both implementations."""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from config.store import StoreConfig
from messages.untrusted import repair_json, repair_text
from store import InMemorySessionStore, SessionMeta, SqliteSessionStore
from store.postgres import PostgresSessionStore
from tests.strategies import hostile_json_values, hostile_text, text_with_surrogate

_ids = itertools.count()
Store = SqliteSessionStore | PostgresSessionStore | InMemorySessionStore


@asynccontextmanager
async def _open(kind: str, directory: Path, request: pytest.FixtureRequest) -> AsyncIterator[Store]:
    # Each Hypothesis example runs in its own Trio run, so each opens its own store (a fresh SQLite file;
    # on PostgreSQL, the test's database again: session ids never repeat).
    if kind == "memory":
        yield InMemorySessionStore()
        return
    if kind == "postgres":
        async with PostgresSessionStore.open(request.getfixturevalue("postgres_url"), StoreConfig()) as pg_store:
            yield pg_store
        return
    path = directory / f"state-{next(_ids)}.db"
    async with SqliteSessionStore.open(path, StoreConfig(busy_timeout_seconds=5.0)) as store:
        yield store


def _messages(content: str, reasoning: str, arguments: Any, extra: Any) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": content},
        {
            "role": "assistant",
            "content": [{"type": "text", "text": content}],
            "reasoning": reasoning,
            "tool_calls": [{"id": "call_1", "type": "function",
                            "function": {"name": "todo", "arguments": json.dumps(arguments, ensure_ascii=False)}}],
            "provider_extra": extra,
        },
        {"role": "tool", "tool_call_id": "call_1", "name": "todo", "content": content},
    ]


class TestHostileSessions:
    """A session whose every text is hostile is stored as its repair, and found by search."""

    @pytest.mark.parametrize("kind", ["sqlite", "postgres", "memory"])
    @settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(
        content=text_with_surrogate(),
        reasoning=hostile_text,
        title=text_with_surrogate(),
        arguments=hostile_json_values(),
        extra=hostile_json_values(),
    )
    async def test_written_read_back_and_searched(
        self, kind: str, tmp_path: Path, request: pytest.FixtureRequest,
        content: str, reasoning: str, title: str, arguments: Any, extra: Any,
    ) -> None:
        """Every write succeeds; what is read, searched and exported is the input with surrogates repaired."""
        async with _open(kind, tmp_path, request) as store:
            await self._check(store, content, reasoning, title, arguments, extra)

    async def _check(self, any_store: Store, content: str, reasoning: str, title: str, arguments: Any, extra: Any) -> None:
        session_id = f"hostile-{next(_ids)}"
        await any_store.create_session(SessionMeta(id=session_id, title=title, cwd=f"/tmp/{reasoning}", model=reasoning))
        messages = _messages(content, reasoning, arguments, extra)
        await any_store.append(session_id, messages)
        await any_store.save_state(session_id, {"notes": extra, "text": content})
        await any_store.record_transcript(session_id, [{"event": content, "data": arguments}])

        loaded = await any_store.load(session_id)
        assert repair_json(messages) == loaded.messages
        assert {"notes": repair_json(extra), "text": repair_text(content)} == loaded.state
        assert repair_text(title.strip()) == loaded.info.title.strip()
        assert repair_text(f"/tmp/{reasoning}") == loaded.info.cwd
        transcript = await any_store.load_transcript(session_id)
        assert {"event": repair_text(content), "data": repair_json(arguments)} == transcript[-1].record

        needle = content.split("needle", 1)[1].split()[0]
        found = await any_store.search(f"needle{needle}", limit=10)
        assert session_id in {matches.session.id for matches in found}
        # split("\n"), not splitlines(): U+2028 and U+0085 are raw inside JSON strings, and no line breaks.
        lines = [line for line in (await any_store.export_jsonl(session_id)).split("\n") if line]
        assert repair_json(messages) == [json.loads(line)["message"] for line in lines[1:4]]
        # Frees the title for the next example (on PostgreSQL they share one database).
        await any_store.delete_session(session_id)

    async def test_surrogate_in_a_search_query(self, any_store: Store) -> None:
        """A query holding a lone surrogate is searched as its repair, not refused by SQLite."""
        await any_store.create_session(SessionMeta(id="q-1"))
        await any_store.append("q-1", [{"role": "user", "content": "broken \ufffd marker"}])
        found = await any_store.search("marker \udc80", limit=5)
        assert ["q-1"] == [matches.session.id for matches in found]

    @pytest.mark.parametrize("kind", ["sqlite", "postgres", "memory"])
    @given(st.text(min_size=1))
    @settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    async def test_clean_text_is_stored_unchanged(
        self, kind: str, tmp_path: Path, request: pytest.FixtureRequest, text: str
    ) -> None:
        """The last line of defence changes nothing in text that was already valid."""
        async with _open(kind, tmp_path, request) as store:
            session_id = f"clean-{next(_ids)}"
            await store.create_session(SessionMeta(id=session_id))
            await store.append(session_id, [{"role": "user", "content": text, "name": text}])
            assert [{"role": "user", "content": text, "name": text}] == (await store.load(session_id)).messages
