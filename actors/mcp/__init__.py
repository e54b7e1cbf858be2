"""The MCP client: each configured server is an actor ``mcp/server:NAME`` under the ``mcp`` supervisor.

- :mod:`~actors.mcp.supervisor`: the supervisor, its children and ``/reload-mcp``;
- :mod:`~actors.mcp.server_actor`: one server's connection, state, backoff and tool refresh;
- :mod:`~actors.mcp.client`: how a tool call borrows the connection (interrupts reach the request);
- :mod:`~actors.mcp.registration`, :mod:`~actors.mcp.naming`, :mod:`~actors.mcp.convert`: MCP tools
  as the registry's tools (``mcp_<server>_<tool>`` in toolset ``mcp-<server>``) and their results;
- :mod:`~actors.mcp.stdio`, :mod:`~actors.mcp.transports`: stdio (our launcher: scrubbed environment,
  dies with the daemon), streamable HTTP and SSE (the SDK's);
- :mod:`~actors.mcp.errors`: the error tree.
"""

from typing import TYPE_CHECKING, Any

from actors.mcp.deps import McpDeps
from actors.mcp.errors import (
    McpCallError,
    McpCallTimeout,
    McpConnectError,
    McpConnectionLost,
    McpProtocolError,
    McpUnavailable,
)
from actors.mcp.supervisor import MCP, McpSupervisor, Reloaded, ReloadServers, ServerClients, server_child_name

if TYPE_CHECKING:
    from actors.mcp.client import McpClient
    from actors.mcp.server_actor import McpServerActor, McpServerState, McpServerStatistics

#: Names whose modules import the MCP SDK: loaded on first use, not with the package (a daemon with no
#: server configured never pays for the SDK).
_LAZY = {
    "McpClient": "actors.mcp.client",
    "McpServerActor": "actors.mcp.server_actor",
    "McpServerState": "actors.mcp.server_actor",
    "McpServerStatistics": "actors.mcp.server_actor",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'actors.mcp' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)

__all__ = [
    "MCP",
    "McpCallError",
    "McpCallTimeout",
    "McpClient",
    "McpConnectError",
    "McpConnectionLost",
    "McpDeps",
    "McpProtocolError",
    "McpServerActor",
    "McpServerState",
    "McpServerStatistics",
    "McpSupervisor",
    "McpUnavailable",
    "ReloadServers",
    "Reloaded",
    "ServerClients",
    "server_child_name",
]
