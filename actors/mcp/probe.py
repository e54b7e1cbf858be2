"""``hermes-actors mcp test NAME``: connect to one server once, list its tools, and time it.

Runs in the CLI's own process, outside any daemon, through the same transports the server actors use
(so a stdio server gets the same scrubbed environment, and dies with the command).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping

import attrs
import trio
from mcp import ClientSession

from actors.mcp.naming import tool_names
from actors.mcp.session import CLIENT_INFO, describe_error, list_all_tools
from actors.mcp.transports import Transport, open_transport
from config.mcp import McpServerConfig
from tools.jail._spawner import Spawner

__all__ = ["ProbeResult", "ProbedTool", "probe_server"]


@attrs.frozen
class ProbedTool:
    """One tool the server listed: the name the model would call, the server's name, its description."""

    name: str
    mcp_name: str
    description: str
    read_only: bool


@attrs.frozen
class ProbeResult:
    """What one connection attempt found; ``error`` None means it worked."""

    server: str
    transport: str
    ok: bool
    connect_ms: float
    list_ms: float
    tools: list[ProbedTool] = attrs.Factory(list)
    error: str | None = None
    server_info: str = ""


async def probe_server(config: McpServerConfig, environ: Mapping[str, str]) -> ProbeResult:
    """Connect to ``config``'s server within its ``connect_timeout``, list its tools, disconnect."""
    spawner = Spawner("hermes-mcp-probe")
    spawner.start()
    started = time.perf_counter()
    connected = listed = math.nan
    opened: list[Transport] = []
    try:
        with trio.fail_after(config.connect_timeout):
            async with open_transport(config, spawner, environ) as transport:
                opened.append(transport)
                async with ClientSession(transport.read, transport.write, client_info=CLIENT_INFO) as session:
                    init = await session.initialize()
                    connected = time.perf_counter()
                    tools = await list_all_tools(session)
                    listed = time.perf_counter()
    except trio.TooSlowError:
        return _failed(config, started, f"no answer within connect_timeout ({config.connect_timeout:g}s)")
    except Exception as exc:
        how = opened[0].describe_end() if opened else ""
        return _failed(config, started, describe_error(exc) + (f" (the server {how})" if how else ""))
    finally:
        spawner.close()
    by_name = {tool.name: tool for tool in tools}
    probed = [
        ProbedTool(
            name=name, mcp_name=tool, description=(by_name[tool].description or "").strip().split("\n")[0],
            read_only=bool((hints := by_name[tool].annotations) and hints.read_only_hint),
        )
        for name, tool in tool_names(config.name, by_name).items()
    ]
    info = init.server_info
    return ProbeResult(
        server=config.name, transport=config.transport, ok=True,
        connect_ms=(connected - started) * 1000, list_ms=(listed - connected) * 1000, tools=probed,
        server_info=f"{info.name} {info.version or ''}".strip() if info else "",
    )


def _failed(config: McpServerConfig, started: float, error: str) -> ProbeResult:
    return ProbeResult(
        server=config.name, transport=config.transport, ok=False,
        connect_ms=(time.perf_counter() - started) * 1000, list_ms=0.0, error=error,
    )
