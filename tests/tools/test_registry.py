"""The tool registry."""

from __future__ import annotations

import trio
import pytest

from tests.tools.helpers import echo_handler, schema
from tools.errors import RegistrationError, ToolShadowingError
from tools.registry import CHECK_FN_TTL_SECONDS, ToolRegistry


class TestRegister:
    """Registration validates its input and refuses silent shadowing."""

    def test_shadowing_another_toolset_refused(self) -> None:
        registry = ToolRegistry()
        registry.register("read_file", "file", schema(), echo_handler)
        with pytest.raises(ToolShadowingError, match="already belongs to toolset 'file'"):
            registry.register("read_file", "plugin-x", schema(), echo_handler)
        assert "file" == registry.get("read_file").toolset

    def test_override_allows_shadowing(self) -> None:
        registry = ToolRegistry()
        registry.register("read_file", "file", schema(), echo_handler)
        registry.register("read_file", "plugin-x", schema("better"), echo_handler, override=True)
        assert "plugin-x" == registry.get("read_file").toolset

    def test_same_toolset_refresh_and_mcp_to_mcp_allowed(self) -> None:
        registry = ToolRegistry()
        registry.register("t", "mcp-a", schema("v1"), echo_handler)
        registry.register("t", "mcp-a", schema("v2"), echo_handler)
        registry.register("t", "mcp-b", schema("v3"), echo_handler)
        assert "v3" == registry.get("t").schema["description"]

    @pytest.mark.parametrize("name", ["", "has space", "x" * 65, "dots.not.allowed"])
    def test_bad_name(self, name: str) -> None:
        with pytest.raises(RegistrationError, match="invalid tool name"):
            ToolRegistry().register(name, "t", schema(), echo_handler)

    def test_path_scoped_must_name_an_argument(self) -> None:
        with pytest.raises(RegistrationError, match="unknown arguments"):
            ToolRegistry().register("t", "t", schema(path={"type": "string"}), echo_handler, path_scoped="file")

    def test_non_object_parameters_refused(self) -> None:
        with pytest.raises(RegistrationError, match="JSON object schema"):
            ToolRegistry().register("t", "t", {"parameters": {"type": "array"}}, echo_handler)

    def test_path_scoped_string_becomes_tuple(self) -> None:
        entry = ToolRegistry().register("t", "t", schema(path={"type": "string"}), echo_handler, path_scoped="path")
        assert ("path",) == entry.path_scoped


class TestGetDefinitions:
    """The four-step pipeline, memoization and the generation counter."""

    def test_four_steps(self) -> None:
        registry = ToolRegistry()
        registry.register("b_tool", "t", {"name": "wrong", **schema("B")}, echo_handler)
        registry.register("a_tool", "t", schema("A"), echo_handler)
        registry.register("hidden", "t", schema("H"), echo_handler, check_fn=lambda: False)
        offered_seen: list[frozenset[str]] = []
        registry.set_schema_override("a_tool", lambda offered: offered_seen.append(offered) or {"description": "A with limits 3"})
        defs = registry.get_definitions({"b_tool", "a_tool", "hidden", "missing"})
        assert ["a_tool", "b_tool"] == [d["function"]["name"] for d in defs]
        assert [frozenset({"a_tool", "b_tool"})] == offered_seen, "the override is told what the list offers"
        assert {"function"} == {d["type"] for d in defs}
        assert "A with limits 3" == defs[0]["function"]["description"]
        assert "wrong" == registry.get("b_tool").schema["name"], "stored schema must not be mutated"

    def test_memoized_until_generation_changes(self) -> None:
        registry = ToolRegistry()
        registry.register("a", "t", schema(), echo_handler)
        calls = []
        registry.set_schema_override("a", lambda offered: calls.append(1) or {"description": f"n={len(calls)}"})
        first = registry.get_definitions(["a"])
        assert first == registry.get_definitions(["a"])
        assert 1 == len(calls)
        generation = registry.generation
        registry.register("b", "t", schema(), echo_handler)
        assert generation < registry.generation
        assert "n=2" == registry.get_definitions(["a"])[0]["function"]["description"]

    def test_override_none_removes(self) -> None:
        registry = ToolRegistry()
        registry.register("a", "t", schema("orig"), echo_handler)
        registry.set_schema_override("a", lambda offered: {"description": "patched"})
        registry.set_schema_override("a", None)
        assert "orig" == registry.get_definitions(["a"])[0]["function"]["description"]

    def test_override_of_unknown_tool(self) -> None:
        with pytest.raises(KeyError):
            ToolRegistry().set_schema_override("nope", lambda offered: {})

    def test_deregister(self) -> None:
        registry = ToolRegistry()
        registry.register("a", "t", schema(), echo_handler)
        registry.get_definitions(["a"])
        registry.deregister("a")
        assert [] == registry.get_definitions(["a"])
        assert "a" not in registry


class TestCheckFnCache:
    """check_fn results are cached for 30 s on the injected clock."""

    async def test_cached_30_seconds(self, autojump_clock: trio.testing.MockClock) -> None:
        state = {"ok": False, "calls": 0}

        def check() -> bool:
            state["calls"] += 1
            return state["ok"]

        registry = ToolRegistry(clock=trio.current_time)
        registry.register("web_search", "web", schema(), echo_handler, check_fn=check)
        assert [] == registry.get_definitions(["web_search"])
        state["ok"] = True
        await trio.sleep(CHECK_FN_TTL_SECONDS - 1)
        assert not registry.is_available("web_search")
        assert [] == registry.get_definitions(["web_search"])
        assert 1 == state["calls"]
        await trio.sleep(2)
        assert ["web_search"] == [d["function"]["name"] for d in registry.get_definitions(["web_search"])]
        assert 2 == state["calls"]

    async def test_memo_expires_with_oldest_check(self, autojump_clock: trio.testing.MockClock) -> None:
        """A memoized list never serves a check result older than the TTL."""
        state = {"ok": True}
        registry = ToolRegistry(clock=trio.current_time)
        registry.register("a", "t", schema(), echo_handler, check_fn=lambda: state["ok"])
        registry.register("b", "t", schema(), echo_handler)
        assert registry.is_available("a")  # check cached at t=0
        await trio.sleep(20)
        assert 2 == len(registry.get_definitions(["a", "b"]))  # memo built at t=20 from the t=0 check
        state["ok"] = False
        await trio.sleep(11)
        assert ["b"] == [d["function"]["name"] for d in registry.get_definitions(["a", "b"])]

    def test_crashing_override_falls_back(self, caplog: pytest.LogCaptureFixture) -> None:
        registry = ToolRegistry()
        registry.register("a", "t", schema("plain"), echo_handler)
        registry.set_schema_override("a", lambda offered: 1 / 0)
        assert "plain" == registry.get_definitions(["a"])[0]["function"]["description"]
        assert "schema override of a raised" in caplog.text

    def test_crashing_check_means_unavailable(self) -> None:
        registry = ToolRegistry()
        registry.register("t", "t", schema(), echo_handler, check_fn=lambda: 1 / 0)
        assert not registry.is_available("t")

    def test_invalidate_rechecks(self) -> None:
        answers = iter([False, True])
        registry = ToolRegistry()
        registry.register("t", "t", schema(), echo_handler, check_fn=lambda: next(answers))
        assert not registry.is_available("t")
        registry.invalidate()
        assert registry.is_available("t")


class TestCapResult:
    """Oversized results are cut with a notice of how much was omitted."""

    def test_cut_with_notice(self) -> None:
        registry = ToolRegistry()
        registry.register("t", "t", schema(), echo_handler, max_result_size_chars=100)
        capped = registry.cap_result("t", "x" * 1_100)
        assert capped.startswith("x" * 100 + "\n\n[... 1,000 characters omitted")
        assert "x" * 101 not in capped

    def test_short_result_untouched(self) -> None:
        registry = ToolRegistry()
        registry.register("t", "t", schema(), echo_handler, max_result_size_chars=100)
        assert "y" * 100 == registry.cap_result("t", "y" * 100)
