"""The control requests about MCP servers: their states, and reloading ``mcp_servers``."""

from __future__ import annotations

import functools
import logging
from typing import Any

import trio

from actors import ActorNotFound
from supervisor import ActorSystem
from actors.mcp import MCP, McpCallError, ReloadServers, ServerClients
from actors.mcp.status import mcp_statuses
from control.errors import RequestFailed
from control.paths import DaemonPaths
from config.errors import ConfigError
from config.loader import load_config
from messages import control as c

__all__ = ["mcp_call", "mcp_server_statuses", "mcp_servers", "mcp_tools", "reload_mcp"]

log = logging.getLogger("hermes_actors.control")

#: The longest a reload waits for servers to connect (the control connection's own bound is 60 s).
_RELOAD_WAIT_MAX = 45.0


def mcp_server_statuses(system: ActorSystem) -> list[c.McpServerStatus]:
    """Each configured server's state, from the ``mcp`` subtree (none when the daemon runs no MCP)."""
    try:
        node = system.tree(MCP)
    except ActorNotFound:
        return []
    return mcp_statuses(node)


def mcp_servers(system: ActorSystem, request: c.McpServers) -> c.McpReply:
    """The configured MCP servers and their states."""
    return c.McpReply(request.request_id, mcp_server_statuses(system))


async def mcp_tools(system: ActorSystem, request: c.McpTools) -> c.McpToolsReply:
    """Each server's tools as it last listed them (a session host registers them to call through here).

    Raises:
        RequestFailed: ``unavailable`` when this daemon runs no MCP.
    """
    clients = await _clients(system)
    return c.McpToolsReply(request.request_id, {
        name: [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in client.listed]
        for name, client in clients.items() if client.listed
    })


async def mcp_call(system: ActorSystem, request: c.McpCall) -> c.McpCallReply:
    """One tool call for a session host: its result, or the error the model is to see.

    Raises:
        RequestFailed: ``unavailable`` when this daemon runs no MCP, ``not_found`` for an unknown server.
    """
    client = (await _clients(system)).get(request.server)
    if client is None:
        raise RequestFailed("not_found", f"no MCP server {request.server!r} runs here")
    try:
        result = await client.call(request.tool, request.arguments)
    except McpCallError as exc:
        return c.McpCallReply(request.request_id, error=str(exc))
    return c.McpCallReply(request.request_id, dict(result.payload), result.unsuccessful)


async def _clients(system: ActorSystem) -> dict[str, Any]:
    try:
        supervisor = system.lookup(MCP)
    except ActorNotFound as exc:
        raise RequestFailed("unavailable", "this daemon runs no MCP servers") from exc
    return dict(await supervisor.ask(ServerClients()))


async def reload_mcp(system: ActorSystem, paths: DaemonPaths, request: c.ReloadMcp) -> c.McpReply:
    """Read ``mcp_servers`` again, restart every server, and answer once they have settled.

    Raises:
        RequestFailed: ``invalid`` when config.yaml cannot be read, ``unavailable`` without MCP.
    """
    try:
        supervisor = system.lookup(MCP)
    except ActorNotFound as exc:
        raise RequestFailed("unavailable", "this daemon runs no MCP servers") from exc
    warnings: list[str] = []
    try:
        config = await trio.to_thread.run_sync(functools.partial(load_config, paths.home, warnings=warnings))
    except ConfigError as exc:
        raise RequestFailed("invalid", f"config.yaml was not reloaded: {exc}") from exc
    reloaded = await supervisor.ask(ReloadServers(config.mcp_servers))
    log.info("MCP servers reloaded: %s", ", ".join(config.mcp_servers) or "none configured")
    with trio.move_on_after(max(0.0, min(request.wait_seconds, _RELOAD_WAIT_MAX))):
        for settled in reloaded.settled.values():
            await settled.wait()
    return c.McpReply(request.request_id, mcp_server_statuses(system), warnings)
