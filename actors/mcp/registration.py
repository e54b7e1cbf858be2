"""A server's tools in the daemon's registry, kept in step with what ``tools/list`` says.

One toolset per server (``mcp-NAME``); tool names by :mod:`actors.mcp.naming`. The registry's rules
hold: a name that would shadow a built-in tool is refused (logged, the tool left out), and an MCP
tool may replace another server's tool of the same name (MCP-to-MCP refresh). A tool is parallel-safe
only when the server marks it read-only.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

import mcp_types as types

from actors.mcp.client import McpClient
from actors.mcp.convert import McpSchemaError, is_read_only, tool_schema
from actors.mcp.naming import tool_names, toolset_name
from tools.context import ToolContext
from tools.errors import RegistrationError
from tools.registry import Handler, ToolRegistry
from tools.results import ToolResult

__all__ = ["MCP_EMOJI", "ToolRegistration"]

log = logging.getLogger("hermes_actors.mcp")

MCP_EMOJI = "🔌"


def _handler(client: McpClient, tool: str) -> Handler:
    async def call(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return await client.call(tool, args)

    return call


class ToolRegistration:
    """The registered tools of one server: ``{model-facing name: MCP tool name}``.

    Args:
        server: the server's name.
        client: what the handlers call through.
        registry: the daemon's tool registry.
    """

    def __init__(self, server: str, client: McpClient, registry: ToolRegistry) -> None:
        self.server = server
        self.toolset = toolset_name(server)
        self._client = client
        self._registry = registry
        self._names: dict[str, str] = {}

    def __len__(self) -> int:
        return len(self._names)

    def names(self) -> dict[str, str]:
        """``{model-facing name: MCP tool name}`` of the tools registered now."""
        return dict(self._names)

    def update(self, tools: Iterable[types.Tool]) -> None:
        """Register ``tools`` (a full listing) and drop those the server no longer has."""
        by_name = {tool.name: tool for tool in tools}
        registered: dict[str, str] = {}
        for name, tool_name in tool_names(self.server, by_name).items():
            tool = by_name[tool_name]
            try:
                schema = tool_schema(self.server, tool)
                self._registry.register(
                    name, self.toolset, schema, _handler(self._client, tool_name),
                    parallel_safe=is_read_only(tool), emoji=MCP_EMOJI,
                )
            except (McpSchemaError, RegistrationError) as exc:
                log.warning("MCP server %s: tool %s left out: %s", self.server, tool_name, exc)
                continue
            registered[name] = tool_name
        for stale in self._names.keys() - registered.keys():
            self._drop(stale)
        self._names = registered

    def clear(self) -> None:
        """Deregister every tool of this server."""
        for name in self._names:
            self._drop(name)
        self._names = {}

    def _drop(self, name: str) -> None:
        entry = self._registry.get(name)
        # Another server may have taken the name since (MCP-to-MCP): that one stays.
        if entry is not None and entry.toolset == self.toolset:
            self._registry.deregister(name)
