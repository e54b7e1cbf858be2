"""Real MCP servers for the tests (the SDK's server side, in processes of their own) and waits on actors."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import trio

from supervisor import ActorSystem, ChildSpec
from actors.mcp import MCP, McpDeps, McpSupervisor
from config.mcp import McpEntry, McpServerConfig
from messages.supervision import ActorSnapshot
from tests.daemon.jailed import processes_with as processes_with  # one definition, shared with the daemon tests
from tools.registry import ToolRegistry

TOY = str(Path(__file__).parent / "servers" / "toy_server.py")
#: Long enough for a Python MCP server to import the SDK on a loaded machine.
CONNECT = 20.0


def tag() -> str:
    """A marker put on a test's server command lines, to find any process it left behind."""
    return f"--tag={uuid.uuid4().hex}"


def stdio(name: str, marker: str, *flags: str, **options: Any) -> McpServerConfig:
    """A toy server over stdio."""
    options.setdefault("connect_timeout", CONNECT)
    return McpServerConfig(name=name, command=sys.executable, args=(TOY, "stdio", marker, *flags), **options)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@asynccontextmanager
async def http_server(marker: str, *flags: str, port: int | None = None) -> AsyncIterator[str]:
    """A toy server over streamable HTTP on loopback; yields its URL once it accepts connections."""
    port = port or free_port()
    process = await trio.lowlevel.open_process(
        [sys.executable, TOY, "http", str(port), marker, *flags],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        with trio.fail_after(CONNECT):
            while True:
                try:
                    stream = await trio.open_tcp_stream("127.0.0.1", port)
                except OSError:
                    await trio.sleep(0.05)
                    continue
                await stream.aclose()
                break
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.kill()
        with trio.CancelScope(shield=True):
            await process.wait()


@asynccontextmanager
async def running_mcp(
    system: ActorSystem, entries: Mapping[str, McpEntry], registry: ToolRegistry | None = None, **policy: float
) -> AsyncIterator[ToolRegistry]:
    """An ``mcp`` supervisor under the system's root for ``entries``; stopped at the end."""
    registry = registry if registry is not None else ToolRegistry()
    deps = McpDeps(registry=registry, environ=dict(os.environ), **{"backoff_initial": 0.05, **policy})
    await system.root.start_child(ChildSpec(MCP, lambda: McpSupervisor(entries, deps)))
    try:
        yield registry
    finally:
        await system.root.terminate_child(MCP, "test over")


def server_snapshot(system: ActorSystem, name: str) -> ActorSnapshot:
    return system.lookup(f"mcp/server:{name}").statistics()


async def wait_state(system: ActorSystem, name: str, state: str, *, attempts: int = 1, timeout: float = CONNECT) -> ActorSnapshot:
    """Wait until server ``name`` is in ``state`` at its ``attempts``-th attempt or later."""
    with trio.fail_after(timeout):
        while True:
            try:
                snapshot = server_snapshot(system, name)
            except Exception:
                snapshot = None
            if snapshot is not None and snapshot.details["state"] == state and snapshot.details["attempts"] >= attempts:
                return snapshot
            await trio.sleep(0.02)
