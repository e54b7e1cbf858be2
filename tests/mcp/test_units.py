"""Names, schemas, results and registry rules of MCP tools, without a server."""

from __future__ import annotations

import re

import mcp_types as types
import pytest

from actors.mcp.client import McpClient
from actors.mcp.convert import McpSchemaError, McpToolFailed, tool_result, tool_schema
from actors.mcp.naming import MAX_TOOL_NAME, tool_names, toolset_name
from actors.mcp.registration import ToolRegistration
from tests.tools.helpers import echo_handler, schema
from tools.registry import ToolRegistry

_ALLOWED = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def _tool(name: str, read_only: bool | None = None, **input_schema) -> types.Tool:
    annotations = None if read_only is None else types.ToolAnnotations(read_only_hint=read_only)
    return types.Tool(name=name, input_schema=input_schema or {"type": "object"}, annotations=annotations)


class TestNaming:
    """Hermes's mcp_<server>_<tool>, within the providers' characters and length."""

    def test_prefix_and_sanitising(self) -> None:
        assert tool_names("git-hub", ["list.issues", "get issue"]) == {
            "mcp_git_hub_get_issue": "get issue",
            "mcp_git_hub_list_issues": "list.issues",
        }
        assert toolset_name("git-hub") == "mcp-git_hub"

    def test_long_names_stay_unique_and_valid(self) -> None:
        names = tool_names("server", ["x" * 80 + "a", "x" * 80 + "b"])
        assert len(names) == 2
        assert all(_ALLOWED.match(name) and len(name) <= MAX_TOOL_NAME for name in names)

    def test_names_that_sanitise_alike_get_suffixes(self) -> None:
        assert tool_names("s", ["a.b", "a-b", "a_b"]) == {"mcp_s_a_b": "a-b", "mcp_s_a_b_2": "a.b", "mcp_s_a_b_3": "a_b"}


class TestConvert:
    """Schemas and results in the project's shapes."""

    def test_schema(self) -> None:
        tool = types.Tool(
            name="t", description="Does t.",
            input_schema={"$schema": "x", "title": "tArgs", "type": "object", "properties": {"a": {"type": "string"}}},
        )
        assert tool_schema("s", tool) == {
            "description": "Does t.", "parameters": {"type": "object", "properties": {"a": {"type": "string"}}},
        }
        assert tool_schema("s", _tool("u"))["description"] == "The u tool of the MCP server s."

    def test_non_object_schema_is_refused(self) -> None:
        with pytest.raises(McpSchemaError):
            tool_schema("s", _tool("t", type="string"))

    def test_structured_only_and_error(self) -> None:
        result = types.CallToolResult(content=[], structured_content={"n": 1})
        assert tool_result(result).payload == {"result": "", "structured": {"n": 1}}
        with pytest.raises(McpToolFailed, match="^boom$"):
            tool_result(types.CallToolResult(content=[types.TextContent(type="text", text="boom")], is_error=True))


class TestRegistration:
    """MCP never shadows a built-in; MCP-to-MCP replacement is allowed; read-only means parallel-safe."""

    def test_rules(self) -> None:
        registry = ToolRegistry()
        registry.register("mcp_a_read", "file", schema(), echo_handler)
        first = ToolRegistration("a", McpClient("a", 1.0), registry)
        first.update([_tool("read", read_only=True), _tool("write"), _tool("look", read_only=True)])
        assert registry.get("mcp_a_read").toolset == "file"  # the built-in stays
        assert first.names() == {"mcp_a_write": "write", "mcp_a_look": "look"}
        assert registry.get("mcp_a_look").parallel_safe and not registry.get("mcp_a_write").parallel_safe
        # Another server's tool that comes out with the same name replaces it; clearing the first leaves it.
        first.update([_tool("b_c")])
        second = ToolRegistration("a_b", McpClient("a_b", 1.0), registry)
        second.update([_tool("c")])
        assert registry.get("mcp_a_b_c").toolset == "mcp-a_b"
        first.clear()
        assert registry.get("mcp_a_b_c").toolset == "mcp-a_b"
        assert "mcp_a_look" not in registry

    def test_update_drops_tools_gone(self) -> None:
        registry = ToolRegistry()
        registration = ToolRegistration("s", McpClient("s", 1.0), registry)
        registration.update([_tool("a"), _tool("b")])
        registration.update([_tool("b")])
        assert registry.tools_in_toolset("mcp-s") == {"mcp_s_b"}
