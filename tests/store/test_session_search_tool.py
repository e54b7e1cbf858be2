"""The session_search tool: its actions, defaults, argument checks and errors, through the real registry."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from store import InMemorySessionStore, SessionMeta, SqliteSessionStore
from tests.tools.helpers import model_view
from tools.dispatch import dispatch
from tools.registry import ToolRegistry
from tools.session_search import register_session_search, session_search
from tools.testing import LocalToolContext


@pytest.fixture
async def ctx(sqlite_store: SqliteSessionStore, tmp_path: Path) -> LocalToolContext:
    """A context whose session is 'now', over a store with a few past sessions."""
    store = sqlite_store
    await store.create_session(SessionMeta(id="past1", title="Falcon planning", source="cli", started_at=1_700_000_000))
    await store.append(
        "past1",
        [
            {"role": "user", "content": "let us plan the falcon launch"},
            {"role": "assistant", "content": "Falcon launch plan drafted"},
            {"role": "tool", "tool_call_id": "c", "name": "terminal", "content": "falcon.log rotated"},
        ]
        + [{"role": "user", "content": f"filler {i}"} for i in range(40)],
    )
    await store.create_session(SessionMeta(id="past2", source="api"))
    await store.append("past2", [{"role": "user", "content": "falcon pricing question"}])
    await store.create_session(SessionMeta(id="now"))
    await store.append("now", [{"role": "user", "content": "what did we say about falcon?"}])
    return LocalToolContext(home=tmp_path, session_id="now", store=store)  # type: ignore[arg-type]  # both stores the fixture gives serve the tool's protocol


async def call(ctx: LocalToolContext, **args: Any) -> dict[str, Any]:
    return await model_view(session_search, args, ctx)


class TestSearch:
    """Discovery by query, in Hermes's shape: grouped sessions with bookends, the hit in context."""

    async def test_defaults(self, ctx: LocalToolContext) -> None:
        reply = await call(ctx, query="falcon")
        assert reply["success"] is True and reply["count"] == 2
        assert sorted(r["session_id"] for r in reply["results"]) == ["past1", "past2"]
        past1 = next(r for r in reply["results"] if r["session_id"] == "past1")
        assert (past1["title"], past1["when"], past1["source"]) == ("Falcon planning", "2023-11-14T22:13:20+00:00", "cli")
        assert "falcon" in past1["snippet"].lower()

    async def test_each_result_has_its_sessions_first_and_last_messages(self, ctx: LocalToolContext) -> None:
        past1 = next(r for r in (await call(ctx, query="drafted"))["results"] if r["session_id"] == "past1")
        assert [m["content"] for m in past1["bookend_start"]] == [
            "let us plan the falcon launch", "Falcon launch plan drafted", "filler 0",
        ], "user and assistant messages only"
        assert [m["content"] for m in past1["bookend_end"]] == ["filler 37", "filler 38", "filler 39"]
        [anchor] = [m for m in past1["messages"] if m.get("anchor")]
        assert anchor["content"] == "Falcon launch plan drafted"
        assert [m["role"] for m in past1["messages"][:3]] == ["user", "assistant", "tool"], "the window keeps every role"

    async def test_a_short_session_shows_all_of_itself_at_both_ends(self, ctx: LocalToolContext) -> None:
        past2 = next(r for r in (await call(ctx, query="pricing"))["results"] if r["session_id"] == "past2")
        assert [m["content"] for m in past2["bookend_start"]] == [m["content"] for m in past2["bookend_end"]] == [
            "falcon pricing question"
        ]

    async def test_sort_newest_and_oldest(self, ctx: LocalToolContext) -> None:
        newest = [r["session_id"] for r in (await call(ctx, query="falcon", sort="newest"))["results"]]
        oldest = [r["session_id"] for r in (await call(ctx, query="falcon", sort="oldest"))["results"]]
        assert newest == ["past2", "past1"] and oldest == ["past1", "past2"]

    async def test_limit_source_dates(self, ctx: LocalToolContext) -> None:
        assert len((await call(ctx, query="falcon", limit=1))["results"]) == 1
        assert len((await call(ctx, query="falcon", limit=50))["results"]) == 2, "clamped, as Hermes does"
        assert [r["session_id"] for r in (await call(ctx, query="falcon", source="api"))["results"]] == ["past2"]
        assert (await call(ctx, query="falcon", date_to="2000-01-01"))["results"] == []
        assert len((await call(ctx, query="falcon", date_from="2000-01-01", date_to="2999-12-31"))["results"]) == 2

    async def test_role_filter_is_comma_separated(self, ctx: LocalToolContext) -> None:
        reply = await call(ctx, query="falcon", role_filter="assistant")
        assert [r["session_id"] for r in reply["results"]] == ["past1"]
        assert (await call(ctx, query="rotated"))["results"] == [], "tool output is not searched by default"
        tools = await call(ctx, query="rotated", role_filter="user, tool")
        assert [r["session_id"] for r in tools["results"]] == ["past1"]

    async def test_compressed_part_of_this_session(self, ctx: LocalToolContext) -> None:
        store = ctx.store
        await store.compact("now", [{"role": "user", "content": "[summary] asked about a heron"}])  # type: ignore[union-attr]  # the fixture's store is one that compacts
        reply = await call(ctx, query="what did we say")
        assert [r["session_id"] for r in reply["results"]] == ["now"]
        assert reply["results"][0]["earlier_in_this_session"] is True
        assert (await call(ctx, query="heron"))["results"] == []


class TestScrollReadBrowse:
    """Scroll around a message, read a session's head and tail, browse recent sessions."""

    async def test_scroll_from_a_hit(self, ctx: LocalToolContext) -> None:
        result = (await call(ctx, query="drafted"))["results"][0]
        anchor = next(m for m in result["messages"] if m.get("anchor"))
        reply = await call(ctx, session_id="past1", around_message_id=anchor["id"], window=1)
        assert reply["session_id"] == "past1" and reply["around_message_id"] == anchor["id"]
        assert [m["content"] for m in reply["messages"]] == [
            "let us plan the falcon launch",
            "Falcon launch plan drafted",
            "falcon.log rotated",
        ]
        assert [m.get("anchor", False) for m in reply["messages"]] == [False, True, False]

    async def test_where_the_window_sits(self, ctx: LocalToolContext) -> None:
        """As in Hermes: a hit's integer match_message_id scrolls, and the counts each side show the ends."""
        hit = (await call(ctx, query="drafted"))["results"][0]
        anchor = next(m for m in hit["messages"] if m.get("anchor"))
        assert isinstance(hit["match_message_id"], int) and hit["match_message_id"] == anchor["id"]
        assert (hit["messages_before"], hit["messages_after"]) == (1, 5), "the session starts one message before"
        reply = await call(ctx, session_id="past1", around_message_id=hit["match_message_id"], window=2)
        assert (reply["messages_before"], reply["messages_after"], reply["window"]) == (1, 2, 2)
        first = await call(ctx, session_id="past1", around_message_id=reply["messages"][0]["id"], window=2)
        assert first["messages_before"] == 0, "fewer than the window: the start of the session"

    async def test_profile(self, ctx: LocalToolContext) -> None:
        """An @session:<profile>/<id> link reads the session when its profile is this one, the only one."""
        assert (await call(ctx, session_id="default/past1"))["session_id"] == "past1"
        assert (await call(ctx, session_id="past1", profile="default"))["session_id"] == "past1"
        for args in ({"session_id": "past1", "profile": "work"}, {"session_id": "work/past1"}):
            assert "No profile 'work' here" in (await call(ctx, **args))["error"]

    async def test_profile_of_a_named_profile(self, ctx: LocalToolContext, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """In a named profile's daemon, a link to that profile reads; the default profile's history is another
        daemon's, refused."""
        monkeypatch.setenv("HERMES_ACTORS_HOME", str(tmp_path))
        monkeypatch.setenv("HERMES_ACTORS_PROFILE", "work")
        work = LocalToolContext(home=tmp_path / "profiles" / "work", session_id="now", store=ctx.store)
        assert (await call(work, session_id="work/past1"))["session_id"] == "past1"
        assert (await call(work, session_id="past1", profile="work"))["session_id"] == "past1"
        error = (await call(work, session_id="default/past1"))["error"]
        assert "No profile 'default' here" in error and "profile 'work'" in error

    async def test_scroll_in_another_session_is_refused(self, ctx: LocalToolContext) -> None:
        anchor = next(m for m in (await call(ctx, query="drafted"))["results"][0]["messages"] if m.get("anchor"))
        assert "No message" in (await call(ctx, session_id="past2", around_message_id=anchor["id"]))["error"]

    async def test_read(self, ctx: LocalToolContext) -> None:
        reply = await call(ctx, session_id="past1")
        assert reply["success"] is True
        assert (len(reply["first_messages"]), reply["omitted_messages"], len(reply["last_messages"])) == (20, 13, 10)
        assert reply["last_messages"][-1]["content"] == "filler 39"

    async def test_browse_leaves_out_the_current_session(self, ctx: LocalToolContext) -> None:
        reply = await call(ctx)
        assert [s["session_id"] for s in reply["sessions"]] == ["past2", "past1"]
        assert reply["sessions"][0]["preview"] == "falcon pricing question"


class TestErrors:
    """Bad arguments and missing things come back as clear error results."""

    @pytest.mark.parametrize(
        ("args", "needle"),
        [
            ({"query": "x", "limit": "many"}, "limit must be an integer"),
            ({"query": "x", "role_filter": "robot"}, "role_filter"),
            ({"query": "x", "sort": "random"}, "sort must be"),
            ({"query": "x", "date_from": "last tuesday"}, "is not a date"),
            ({"query": "x", "date_from": "2025-02-01", "date_to": "2025-01-01"}, "date range is empty"),
            ({"session_id": "past1", "around_message_id": "abc"}, "around_message_id must be"),
            ({"session_id": "past1", "around_message_id": "999999"}, "No message '999999'"),
            ({"session_id": "ghost"}, "No session 'ghost'"),
            ({"session_id": "past1", "around_message_id": "1", "window": 99}, "window must be"),
        ],
    )
    async def test_bad_arguments(self, ctx: LocalToolContext, args: dict[str, Any], needle: str) -> None:
        reply = await call(ctx, **args)
        assert needle in reply["error"]

    async def test_no_store(self, tmp_path: Path) -> None:
        reply = await call(LocalToolContext(home=tmp_path), query="x")
        assert "not available" in reply["error"]


class TestRegistry:
    """Registered under its own toolset; dispatch validates arguments against the schema."""

    async def test_dispatch(self, tmp_path: Path) -> None:
        registry = ToolRegistry()
        entry = register_session_search(registry)
        assert (entry.toolset, entry.parallel_safe) == ("session_search", True)
        store = InMemorySessionStore()
        await store.create_session(SessionMeta(id="old"))
        await store.append("old", [{"role": "user", "content": "heron sighting"}])
        context = LocalToolContext(home=tmp_path, session_id="new", store=store)  # type: ignore[arg-type]  # both stores the fixture gives serve the tool's protocol
        reply = json.loads((await dispatch(registry, "session_search", {"query": "heron"}, context)).text)
        assert reply["results"][0]["session_id"] == "old"
        message_id = reply["results"][0]["match_message_id"]
        scrolled = await dispatch(registry, "session_search", {"session_id": "old", "around_message_id": message_id}, context)
        assert json.loads(scrolled.text)["messages"][0]["content"] == "heron sighting"
        bad = json.loads((await dispatch(registry, "session_search", {"query": "heron", "bogus": 1}, context)).text)
        assert "error" in bad
        definitions = registry.get_definitions(["session_search"])
        assert definitions[0]["function"]["name"] == "session_search"
