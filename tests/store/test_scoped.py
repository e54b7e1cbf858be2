"""The realm-scoped session_search view: API sessions and the others never see each other."""

from __future__ import annotations

from pathlib import Path

import pytest

from store import InMemorySessionStore, SqliteSessionStore
from store.errors import MessageNotFoundError, SessionNotFoundError
from store.records import SessionMeta
from store.scoped import API_REALM, LOCAL_REALM, RealmScopedReader
from tests.tools.helpers import model_view
from tools.session_search import session_search
from tools.testing import LocalToolContext

Store = SqliteSessionStore | InMemorySessionStore


async def _world(store: Store) -> None:
    """A CLI session, an API session, and a subagent of each, all mentioning the same word."""
    for meta in (
        SessionMeta(id="cli1", source="cli"),
        SessionMeta(id="api-1", source="api"),
        SessionMeta(id="cli1-child", source="subagent", parent_session_id="cli1"),
        SessionMeta(id="api-1-child", source="subagent", parent_session_id="api-1"),
    ):
        await store.create_session(meta)
        await store.append(meta.id, [{"role": "user", "content": f"heron notes of {meta.id}"}])


async def _message_id(store: Store, session_id: str) -> int:
    return (await store.read_session(session_id)).head[0].id


class TestRealmScopedReader:
    """Each realm finds, reads and scrolls only its own sessions; the others look absent."""

    @pytest.mark.parametrize(("realm", "mine", "theirs"), [
        (API_REALM, {"api-1", "api-1-child"}, {"cli1", "cli1-child"}),
        (LOCAL_REALM, {"cli1", "cli1-child"}, {"api-1", "api-1-child"}),
    ])  # fmt: skip
    async def test_each_realm_sees_only_itself(self, any_store: Store, realm: str, mine: set[str], theirs: set[str]) -> None:
        await _world(any_store)
        reader = RealmScopedReader(any_store, realm)
        found = {match.session.id for match in await reader.search("heron", limit=10)}
        assert found <= mine and found & mine
        assert {info.id for info in await reader.browse(limit=10)} <= mine
        for session_id in theirs:
            with pytest.raises(SessionNotFoundError):
                await reader.read_session(session_id)
            with pytest.raises(MessageNotFoundError):
                await reader.scroll(await _message_id(any_store, session_id))
        for session_id in mine:
            assert (await reader.read_session(session_id)).session.id == session_id
            assert (await reader.scroll(await _message_id(any_store, session_id)))[0].session_id == session_id

    @pytest.mark.parametrize(("session_id", "source", "realm"), [
        ("api-1", None, API_REALM),
        ("cli1", None, LOCAL_REALM),
        ("api-1-child", None, API_REALM),
        ("api-1-child", "subagent", API_REALM),
        ("cli1-child", "subagent", LOCAL_REALM),
        ("fresh", "api", API_REALM),
        ("fresh", "cli", LOCAL_REALM),
    ])  # fmt: skip
    async def test_for_session(self, any_store: Store, session_id: str, source: str | None, realm: str) -> None:
        """A session's view is its realm; a subagent's is its delegator's; a known own source needs no read
        (``fresh`` is not stored: looking it up would fail)."""
        await _world(any_store)
        reader = await RealmScopedReader.for_session(any_store, session_id, source)
        assert {info.id for info in await reader.browse(limit=10)} <= ({"api-1", "api-1-child"} if realm == API_REALM else {"cli1", "cli1-child"})
        assert await reader._visible(await any_store.get_session("api-1")) == (realm == API_REALM)

    async def test_the_tool_answers_another_realm_as_absent(self, tmp_path: Path) -> None:
        """Through session_search, a CLI session's id reads exactly like an unknown id to an API session."""
        store = InMemorySessionStore()
        await _world(store)
        ctx = LocalToolContext(home=tmp_path, session_id="api-1", store=RealmScopedReader(store, API_REALM))
        other = await model_view(session_search, {"session_id": "cli1"}, ctx)
        unknown = await model_view(session_search, {"session_id": "nope"}, ctx)
        assert other["error"].replace("cli1", "X") == unknown["error"].replace("nope", "X")
