"""``mcp``: the supervisor of the configured MCP servers, one child ``server:NAME`` each.

It starts a child per enabled entry (an invalid entry too, so its error is visible where the others'
states are) and returns at once: children connect in the background. It owns the spawn thread every
stdio server is forked from, so those processes die with the daemon even when it is killed (their
``PR_SET_PDEATHSIG`` follows that thread). :class:`ReloadServers` replaces every child with the
entries given (``/reload-mcp``).
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

import attrs
import trio

from actors.mcp.deps import McpDeps
from config.mcp import DEFAULT_TIMEOUT, McpEntry, McpServerConfig
from messages.request import Request
from supervisor import ChildSpec, RestartType, Supervisor
from tools.jail._spawner import Spawner

if TYPE_CHECKING:
    from actors.mcp.client import McpClient
    from actors.mcp.server_actor import McpServerActor

#: The modules that bring the MCP SDK (about a second of imports): loaded in a worker thread, and only
#: when a server is configured.
_SDK_MODULES = ("actors.mcp.client", "actors.mcp.server_actor")

__all__ = ["MCP", "McpSupervisor", "ReloadServers", "Reloaded", "ServerClients", "server_child_name"]

#: The supervisor's name under the root.
MCP = "mcp"


def server_child_name(server: str) -> str:
    """The child name of a server's actor (``mcp/server:NAME``)."""
    return f"server:{server}"


@attrs.frozen
class ServerClients(Request["dict[str, McpClient]"]):
    """The reply is each enabled server's client by name, for calls made on other processes' behalf
    (session hosts): the caller awaits the call itself, never the supervisor's mailbox."""


@attrs.frozen
class ReloadServers(Request["Reloaded"]):
    """Stop every server actor and start one per entry given; the reply is a :class:`Reloaded`."""

    entries: Mapping[str, McpEntry]


@attrs.frozen
class Reloaded:
    """The servers a reload started, by child name, each with an event set once its first attempt
    has ended (ready or failed): the caller waits on these, not on the supervisor."""

    settled: Mapping[str, trio.Event]


class McpSupervisor(Supervisor):
    """One child per enabled MCP server; a child that crashes (a bug of ours) restarts alone.

    The children are started by a task of the supervisor once the SDK is loaded (in a worker thread):
    the daemon's start never waits for it, as it never waits for a server to connect.

    Args:
        entries: ``mcp_servers`` as the configuration read it.
        deps: what every child shares (with a spawn thread of this instance's own, started and closed here).
    """

    def __init__(self, entries: Mapping[str, McpEntry], deps: McpDeps) -> None:
        self.deps = attrs.evolve(deps, spawner=Spawner("hermes-mcp-spawner"))
        self.entries = dict(entries)
        # One client per server name, across restarts and reloads: the registry's handlers hold it.
        self._clients: dict[str, McpClient] = {}
        super().__init__([], kind=MCP, per_child_intensity=True, max_restarts=3, period=60.0)

    def _specs(self) -> list[ChildSpec]:
        """A spec per enabled entry (the SDK's modules are loaded by now: see :meth:`_load_sdk`)."""
        from actors.mcp.client import McpClient
        from actors.mcp.server_actor import McpServerActor

        specs = []
        for name, entry in self.entries.items():
            if not entry.enabled:
                continue
            timeout = entry.timeout if isinstance(entry, McpServerConfig) else DEFAULT_TIMEOUT
            client = self._clients.get(name)
            if client is None:
                client = self._clients[name] = McpClient(name, timeout)
            client.timeout = timeout
            factory = functools.partial(McpServerActor, entry, client, self.deps)
            specs.append(ChildSpec(server_child_name(name), factory, RestartType.PERMANENT, shutdown_timeout=5.0))
        return specs

    async def on_start(self) -> None:
        self.deps.spawner.start()
        await super().on_start()

    async def main(self) -> None:
        self.start_soon(self._start_servers)
        await super().main()

    async def _start_servers(self) -> None:
        if not any(entry.enabled for entry in self.entries.values()):
            return
        await _load_sdk()
        async with self._lock:
            for spec in self._specs():
                if spec.name not in self._records:  # a reload may have come first
                    await self._add(spec)

    async def on_stop(self) -> None:
        # Last: every server has been stopped by now; closing the thread kills any straggler.
        self.deps.spawner.close()

    def snapshot_details(self) -> dict[str, Any]:
        details = super().snapshot_details()
        disabled = sorted(name for name, entry in self.entries.items() if not entry.enabled)
        if disabled:
            details["disabled"] = disabled
        starting = [name for name, entry in self.entries.items() if entry.enabled and server_child_name(name) not in self._records]
        if starting:
            details["starting"] = starting  # the SDK still loading: their actors come next
        return details

    async def handle(self, message: Any) -> Any:
        if isinstance(message, ReloadServers):
            await _load_sdk()
            async with self._lock:
                for name in list(self._records):
                    await self._remove(name, "reloading MCP servers", "operator")
                self.entries = dict(message.entries)
                settled = {}
                for spec in self._specs():
                    await self._add(spec)
                    server = cast("McpServerActor", self._records[spec.name].actor)
                    settled[spec.name] = server.settled
                return Reloaded(settled)
        if isinstance(message, ServerClients):
            return {name: self._clients[name] for name, entry in self.entries.items() if entry.enabled and name in self._clients}
        return await super().handle(message)


async def _load_sdk() -> None:
    for module in _SDK_MODULES:
        await trio.to_thread.run_sync(importlib.import_module, module)
