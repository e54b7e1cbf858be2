"""``mcp/server:NAME``: the actor that owns one MCP server's connection.

Its life is a loop: connect (start the process or reach the URL, initialise, list the tools) within
the entry's ``connect_timeout``; register the tools; serve until the connection is lost (the process
exited, a call or a health check found the endpoint failing); then wait out a backoff and start
again. It never fails for a server's sake, so its supervisor only restarts it after a bug of ours;
what the server did is its state (``connecting``, ``ready``, ``failed`` with the last error),
shown in ``tree``, ``inspect`` and ``status``.

Nothing waits for it: the daemon's start, a session's start and the other servers go on while it
connects (one slow server once froze a gateway for 120 s: docs/DECISIONS.md#d-mcp-never-blocks). A session gets whatever
tools are registered when its tool list is frozen.
"""

from __future__ import annotations

import enum
import logging
import math
from typing import Any

import attrs
import mcp_types as types
import trio
from mcp import ClientSession

from actors import Actor, error_record
from actors.mcp.client import Link, McpClient
from actors.mcp.deps import McpDeps
from actors.mcp.errors import McpConnectError
from actors.mcp.registration import ToolRegistration
from actors.mcp.session import CLIENT_INFO, describe_error, list_all_tools
from actors.mcp.transports import Transport, open_transport
from config.mcp import InvalidMcpServer, McpEntry
from messages.supervision import ActorState

__all__ = ["McpServerActor", "McpServerState", "McpServerStatistics"]

log = logging.getLogger("hermes_actors.mcp")

#: How long a health check's ping may wait for its answer. A live server answers in milliseconds; the
#: entry's connect_timeout (60 s by default) left a dead endpoint ``ready`` for a minute and a half.
PING_TIMEOUT = 10.0


class McpServerState(enum.Enum):
    """Where a server's connection is."""

    CONNECTING = "connecting"  # starting, initialising or listing its tools
    READY = "ready"  # connected; its tools are registered
    FAILED = "failed"  # the last attempt failed (or the entry is invalid); a retry is due after the backoff


@attrs.frozen
class McpServerStatistics:
    """A server actor's ``statistics()`` details: what ``tree``, ``inspect`` and ``status`` show."""

    server: str
    transport: str
    state: str
    tools: int
    error: str | None
    attempts: int
    retry_in: float | None


class McpServerActor(Actor[None]):
    """Connects to one MCP server, keeps its tools registered, reconnects with backoff.

    Args:
        entry: the server's configuration (an invalid entry stays ``failed`` with its error).
        client: the door tool calls use; it outlives this actor (restarts keep it).
        deps: the registry, the spawn thread, the environment and the timing policy.
    """

    kind = "mcp-server"

    def __init__(self, entry: McpEntry, client: McpClient, deps: McpDeps) -> None:
        super().__init__()
        self.entry = entry
        self.client = client
        self.deps = deps
        self.mcp_state = McpServerState.CONNECTING
        self.error: str | None = None
        self.attempts = 0
        self.retry_at: float | None = None
        self.tools = ToolRegistration(entry.name, client, deps.registry)
        # Invariant: set when the server said its tool list changed and it has not been listed since.
        self._refresh = trio.Event()
        #: Set once the first attempt has ended, ready or failed (a reload waits on it).
        self.settled = trio.Event()

    def mcp_statistics(self) -> McpServerStatistics:
        """The server's state as a frozen snapshot."""
        entry = self.entry
        retry_in = None if self.retry_at is None else max(0.0, self.retry_at - trio.current_time())
        return McpServerStatistics(
            server=entry.name,
            transport="invalid" if isinstance(entry, InvalidMcpServer) else entry.transport,
            state=self.mcp_state.value,
            tools=len(self.tools),
            error=self.error,
            attempts=self.attempts,
            retry_in=retry_in,
        )

    def snapshot_details(self) -> dict[str, Any]:
        return attrs.asdict(self.mcp_statistics())

    async def main(self) -> None:
        self.state = ActorState.RUNNING
        entry = self.entry
        if isinstance(entry, InvalidMcpServer):
            self._set_failed(entry.error)
            self.retry_at = None
            self.activity = f"failed: {entry.error}"
            await trio.sleep_forever()
        failures = 0
        while True:
            self.attempts += 1
            self._set(McpServerState.CONNECTING, f"connecting (attempt {self.attempts})")
            started = trio.current_time()
            try:
                await self._connect_and_serve()
            except McpConnectError as exc:
                self._set_failed(str(exc), exc)
            # A connection that stayed up a while was a success: the next failure starts the backoff over.
            if trio.current_time() - started >= self.deps.stable_after:
                failures = 0
            failures += 1
            delay = min(self.deps.backoff_initial * 2 ** (failures - 1), self.deps.backoff_max)
            self.retry_at = trio.current_time() + delay
            self.activity = f"failed: {self.error}; retrying in {delay:g}s"
            await trio.sleep(delay)
            self.retry_at = None

    async def on_stop(self) -> None:
        self.client.link = None
        self.client.unavailable_reason = "the server was stopped"
        self.tools.clear()

    # -- one connection -------------------------------------------------------------------------

    async def _connect_and_serve(self) -> None:
        """Connect, register the tools, serve until the connection is lost.

        Raises:
            McpConnectError: connecting failed, timed out, or the connection was lost (its reason).
        """
        config = self.entry
        assert not isinstance(config, InvalidMcpServer)
        # One deadline for the whole of connecting, lifted once the server is ready. (A fail_after
        # around entering the transport would have to be left while its task groups are open.)
        opened: list[Transport] = []
        with trio.CancelScope(deadline=trio.current_time() + config.connect_timeout) as connecting:
            try:
                async with open_transport(config, self.deps.spawner, self.deps.environ, self.deps.jails) as transport:
                    opened.append(transport)
                    async with ClientSession(
                        transport.read, transport.write, message_handler=self._on_message, client_info=CLIENT_INFO
                    ) as session:
                        await session.initialize()
                        listed = await list_all_tools(session)
                        connecting.deadline = math.inf
                        ended = transport.process.exited if transport.process is not None else None
                        link = Link(session, transport.describe_end, ended)
                        await self._serve(link, listed)
                        reason = link.lost_reason
            except McpConnectError:
                raise
            except Exception as exc:
                # A process that died while connecting says why on its stderr: that is the useful part.
                how = opened[0].describe_end() if opened else ""
                raise McpConnectError(describe_error(exc) + (f" (the server {how})" if how else "")) from exc
            finally:
                self.client.link = None
        if connecting.cancelled_caught:
            raise McpConnectError(f"no answer within connect_timeout ({config.connect_timeout:g}s)")
        raise McpConnectError(reason or "the connection ended")

    async def _serve(self, link: Link, listed: list[types.Tool]) -> None:
        """Serve one connection until it is lost; its tools are registered meanwhile."""
        self.tools.update(listed)
        self.client.listed = listed
        self.client.link = link
        self.error = None
        self._set(McpServerState.READY, f"ready: {len(self.tools)} tools")
        log.info("MCP server %s ready with %d tools", self.entry.name, len(self.tools))
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._refresh_on_notice, link)
            if link.ended is not None:
                nursery.start_soon(self._watch_process, link)
            else:
                nursery.start_soon(self._health_checks, link)
            await link.lost.wait()
            nursery.cancel_scope.cancel()

    async def _watch_process(self, link: Link) -> None:
        assert link.ended is not None
        await link.ended.wait()
        link.report_lost(f"the server {link.describe_end()}")

    async def _health_checks(self, link: Link) -> None:
        """An HTTP endpoint can fail between calls without a sign: ping it now and then."""
        config = self.entry
        assert not isinstance(config, InvalidMcpServer)
        while True:
            await trio.sleep(self.deps.ping_interval)
            try:
                with trio.fail_after(min(config.connect_timeout, PING_TIMEOUT)):
                    await link.session.send_ping()
            except Exception as exc:
                link.report_lost(f"a health check failed: {describe_error(exc)}")
                return

    async def _refresh_on_notice(self, link: Link) -> None:
        """``notifications/tools/list_changed``: list the tools again and update the registry."""
        while True:
            await self._refresh.wait()
            self._refresh = trio.Event()
            try:
                listed = await list_all_tools(link.session)
            except Exception as exc:
                link.report_lost(f"listing its changed tools failed: {describe_error(exc)}")
                return
            self.tools.update(listed)
            self.client.listed = listed
            self.activity = f"ready: {len(self.tools)} tools"
            log.info("MCP server %s changed its tools: now %d", self.entry.name, len(self.tools))

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self._refresh.set()

    # -- state ----------------------------------------------------------------------------------

    def _set(self, state: McpServerState, activity: str) -> None:
        self.mcp_state = state
        self.activity = activity
        if state is not McpServerState.CONNECTING:
            self.settled.set()

    def _set_failed(self, error: str, exc: BaseException | None = None) -> None:
        self.mcp_state = McpServerState.FAILED
        self.settled.set()
        self.error = error
        self.client.unavailable_reason = f"its last attempt failed ({error})"
        if exc is not None:
            self.last_error = error_record(exc)
        log.warning("MCP server %s: %s", self.entry.name, error)
