"""Toolset resolution."""

from __future__ import annotations

import pytest

from tests.tools.helpers import echo_handler, schema
from tools.errors import ToolsetCycleError, UnknownToolsetError
from tools.registry import ToolRegistry
from tools.toolsets import CORE_TOOLSETS, Toolset, ToolsetCatalog


def catalog(*toolsets: Toolset, registry: ToolRegistry | None = None) -> ToolsetCatalog:
    return ToolsetCatalog(registry or ToolRegistry(), {t.name: t for t in toolsets})


class TestResolve:
    """Includes resolve recursively; cycles and unknown names are errors."""

    def test_recursive_includes(self) -> None:
        cat = catalog(Toolset("a", "", {"t1"}, ("b",)), Toolset("b", "", {"t2"}, ("c",)), Toolset("c", "", {"t3"}))
        assert {"t1", "t2", "t3"} == cat.resolve("a")

    def test_cycle(self) -> None:
        cat = catalog(Toolset("a", "", {"t1"}, ("b",)), Toolset("b", "", {"t2"}, ("a",)))
        with pytest.raises(ToolsetCycleError, match="a -> b -> a"):
            cat.resolve("a")

    def test_unknown_include(self) -> None:
        cat = catalog(Toolset("a", "", {"t1"}, ("ghost",)))
        with pytest.raises(UnknownToolsetError, match="unknown toolset 'ghost'"):
            cat.resolve("a")

    def test_registered_toolset_and_merge_into_static(self) -> None:
        registry = ToolRegistry()
        registry.register("plug", "my-plugin", schema(), echo_handler)
        registry.register("extra_file_tool", "file", schema(), echo_handler)
        cat = ToolsetCatalog(registry)
        assert {"plug"} == cat.resolve("my-plugin")
        assert "extra_file_tool" in cat.resolve("file")
        assert "my-plugin" in cat.names()

    def test_core_cli_includes_clarify_api_does_not(self) -> None:
        cat = ToolsetCatalog(ToolRegistry())
        assert "clarify" in cat.resolve("hermes-cli")
        assert "clarify" not in cat.resolve("hermes-api")
        assert {"read_file", "terminal", "memory", "todo"} <= cat.resolve("hermes-api")
        assert "file" in CORE_TOOLSETS


class TestSelectTools:
    """Enabled toolsets minus disabled ones."""

    def test_send_message_is_opt_in(self) -> None:
        """As in Hermes, no platform toolset offers send_message: only naming ``messaging`` does."""
        registry = ToolRegistry()
        registry.register("send_message", "messaging", schema(), echo_handler)
        cat = ToolsetCatalog(registry)
        for platform in ("hermes-cli", "hermes-telegram", "hermes-discord", "hermes-api", "hermes-cron"):
            assert "send_message" not in cat.select_tools([platform]), platform
        assert "send_message" in cat.select_tools(["hermes-cli", "messaging"])

    def test_disabled_wins(self) -> None:
        cat = ToolsetCatalog(ToolRegistry())
        tools = cat.select_tools(["hermes-cli"], ["web", "terminal"])
        assert "web_search" not in tools and "terminal" not in tools
        assert "read_file" in tools

    def test_default_is_cli(self) -> None:
        cat = ToolsetCatalog(ToolRegistry())
        assert cat.resolve("hermes-cli") == cat.select_tools()


class TestMcpToolsets:
    """MCP servers' toolsets join platform toolsets; disabled_toolsets removes them; absent ones are empty."""

    def _catalog(self):
        from tests.tools.helpers import echo_handler, schema
        from tools.registry import ToolRegistry
        from tools.toolsets import ToolsetCatalog

        registry = ToolRegistry()
        registry.register("read_file", "file", schema(), echo_handler)
        registry.register("mcp_gh_issues", "mcp-gh", schema(), echo_handler)
        registry.register("mcp_db_query", "mcp-db", schema(), echo_handler)
        return ToolsetCatalog(registry)

    def test_default_sessions_get_them(self) -> None:
        tools = self._catalog().select_tools(None)
        assert {"mcp_gh_issues", "mcp_db_query", "read_file"} <= tools

    def test_disabled_and_explicit(self) -> None:
        catalog = self._catalog()
        assert "mcp_gh_issues" not in catalog.select_tools(None, ["mcp-gh"])
        only_file = catalog.select_tools(["file"])
        assert not {"mcp_gh_issues", "mcp_db_query"} & only_file
        assert catalog.select_tools(["file", "mcp-db"]) == only_file | {"mcp_db_query"}

    def test_a_server_not_connected_is_no_error(self) -> None:
        catalog = self._catalog()
        assert catalog.select_tools(["file", "mcp-later"], ["mcp-gone"]) == catalog.select_tools(["file"])
