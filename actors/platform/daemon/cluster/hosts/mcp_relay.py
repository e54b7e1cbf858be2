"""``mcp-relay``: a session host's MCP tools, served by the front's one copy of each server.

With ``daemon.hosts`` above 1 every host used to start its own copy of every server, as the front does
for its cron sessions: three processes for one stdio server with two hosts, each with its own state
(a logged-in browser, an open database). A host now starts none. This actor asks the front for the
tools its servers listed (``McpTools``) and registers them as the front registers its own; each call
goes to the front (``McpCall``), which makes it through its connection to the server. It asks again
every :data:`LIST_INTERVAL` seconds, so a server that connects later, or changes its tools, reaches
the host's new sessions.

The front is reached over its control socket with the blocking client, one connection per request,
in a worker thread: a call that is interrupted is abandoned here and ends at the front under the
server entry's own timeout.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs
import trio

from actors import Actor
from actors.mcp.errors import McpCallError, McpUnavailable
from control.client import ControlClient
from control.errors import DaemonNotRunning, ProtocolError, RequestFailed
from control.paths import DaemonPaths
from messages import control as c
from messages.supervision import ActorState
from tools.results import ToolResult

if TYPE_CHECKING:
    from actors.mcp.registration import ToolRegistration
    from tools.registry import ToolRegistry

__all__ = ["LIST_INTERVAL", "FrontMcp", "McpRelay"]

log = logging.getLogger("hermes_actors.mcp")

#: Seconds between two askings of the front for its servers' tools.
LIST_INTERVAL = 5.0
#: How long asking for the tools may take (the front answers from memory).
_LIST_TIMEOUT = 10.0
#: What a failed request to the front is (its socket gone, a refusal, a reply we cannot read).
_FRONT_ERRORS = (DaemonNotRunning, RequestFailed, ProtocolError, OSError)


class FrontMcp:
    """The front's MCP servers, over its control socket.

    Args:
        paths: the front's files (its control socket).
    """

    def __init__(self, paths: DaemonPaths) -> None:
        self._paths = paths

    async def tools(self) -> dict[str, list[dict[str, Any]]]:
        """Each server's tools as the front last listed them (MCP ``Tool`` objects as JSON).

        Raises:
            DaemonNotRunning, RequestFailed, ProtocolError, OSError: the front did not answer.
        """
        reply = await trio.to_thread.run_sync(self._request, c.McpTools(""), _LIST_TIMEOUT, abandon_on_cancel=True)
        return dict(reply.servers)

    async def call(self, server: str, tool: str, arguments: Mapping[str, Any]) -> ToolResult:
        """Call ``tool`` of ``server`` at the front.

        Raises:
            McpUnavailable: the front could not be asked.
            McpCallError: the call gave no result (the front's message, which the model sees).
        """
        request = c.McpCall("", server, tool, dict(arguments))
        try:
            reply = await trio.to_thread.run_sync(self._request, request, None, abandon_on_cancel=True)
        except _FRONT_ERRORS as exc:
            raise McpUnavailable(
                f"MCP server {server!r} could not be reached through the daemon ({exc}); try again in a little while."
            ) from exc
        if reply.error is not None:
            raise McpCallError(reply.error)
        return ToolResult(reply.payload or {}, reply.unsuccessful)

    def _request(self, message: Any, timeout: float | None) -> Any:
        with ControlClient.connect(self._paths, client="session host", timeout=timeout) as client:
            return client.request(attrs.evolve(message, request_id=client.next_id()))


@attrs.frozen
class _ServerDoor:
    """What one server's registered tools call: the front, for that server."""

    front: FrontMcp
    server: str

    async def call(self, tool: str, arguments: Mapping[str, Any]) -> ToolResult:
        return await self.front.call(self.server, tool, arguments)


class McpRelay(Actor[None]):
    """Keeps the host's registry in step with the front's MCP tools; see the module's docstring.

    Args:
        front: the front's MCP servers.
        registry: the host's tool registry.
        interval: seconds between two askings.
    """

    kind = "mcp-relay"

    def __init__(self, front: FrontMcp, registry: ToolRegistry, interval: float = LIST_INTERVAL) -> None:
        super().__init__()
        self.front = front
        self.registry = registry
        self.interval = interval
        self.error: str | None = None
        self._registrations: dict[str, ToolRegistration] = {}
        # Invariant: what each server's registration was last updated with (an unchanged listing is
        # not registered again, so frozen tool lists are not rebuilt for nothing).
        self._listed: dict[str, list[dict[str, Any]]] = {}

    def snapshot_details(self) -> dict[str, Any]:
        return {
            "servers": sorted(self._registrations),
            "tools": sum(len(registration) for registration in self._registrations.values()),
            "error": self.error,
        }

    async def main(self) -> None:
        self.state = ActorState.RUNNING
        # The SDK's types come with the registration (about a second of imports): off the event loop.
        await trio.to_thread.run_sync(importlib.import_module, "actors.mcp.registration")
        while True:
            try:
                listed = await self.front.tools()
            except _FRONT_ERRORS as exc:
                if self.error is None:
                    log.warning("MCP relay: the front did not list its tools: %s", exc)
                self.error = str(exc)
                self.activity = f"failed: {exc}"
            else:
                self.error = None
                self._update(listed)
                self.activity = f"{len(self._registrations)} servers through the front"
            await trio.sleep(self.interval)

    async def on_stop(self) -> None:
        for registration in self._registrations.values():
            registration.clear()

    def _update(self, listed: dict[str, list[dict[str, Any]]]) -> None:
        import mcp_types as types

        from actors.mcp.registration import ToolRegistration

        for gone in self._registrations.keys() - listed.keys():
            self._registrations.pop(gone).clear()
            self._listed.pop(gone, None)
        for server, tools in listed.items():
            if self._listed.get(server) == tools:
                continue
            registration = self._registrations.get(server)
            if registration is None:
                door: Any = _ServerDoor(self.front, server)
                registration = self._registrations[server] = ToolRegistration(server, door, self.registry)
            registration.update([types.Tool.model_validate(tool) for tool in tools])
            self._listed[server] = tools
            log.info("MCP relay: %s has %d tools at the front", server, len(registration))
