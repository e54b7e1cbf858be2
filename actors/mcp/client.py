"""The narrow door between a server actor and the tool calls that use its connection.

A tool call runs in its session's tool worker, not in the server actor: so a session's interrupt
(the worker's cancel scope) reaches the request itself, and the SDK sends MCP's
``notifications/cancelled`` for it; and calls to one server run side by side instead of queueing in
a mailbox. The actor owns the connection and publishes it here as a :class:`Link` while it is ready;
a call only borrows the link it finds, and reports back (``Link.report_lost``) when the connection
failed under it, so the actor reconnects at once instead of at its next health check.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

import anyio
import httpx2
import mcp_types as types
import trio
from mcp import ClientSession
from mcp.shared.exceptions import MCPError

from actors.mcp.convert import tool_result
from actors.mcp.errors import McpCallTimeout, McpConnectionLost, McpProtocolError, McpUnavailable
from tools.results import ToolResult

__all__ = ["Link", "McpClient"]

log = logging.getLogger("hermes_actors.mcp")

# Errors that mean the connection itself failed (not that the server refused the call).
_TRANSPORT_ERRORS = (
    OSError, httpx2.HTTPError, anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream,
    trio.ClosedResourceError, trio.BrokenResourceError,
)
#: How long a failed call waits for the transport to say how the server ended (a process's status).
_EXIT_NOTICE_SECONDS = 0.2


class Link:
    """One live connection, lent to tool calls while the actor keeps it.

    Args:
        session: the initialised SDK session.
        describe_end: says how the server ended (a process's exit status and last stderr line).
        ended: set by the transport once the server is gone (a stdio process's exit), or None.
    """

    def __init__(
        self, session: ClientSession, describe_end: Callable[[], str], ended: trio.Event | None = None
    ) -> None:
        self.session = session
        self.describe_end = describe_end
        self.ended = ended
        # Invariant: set once, by whoever saw the connection fail first; the actor then reconnects.
        self.lost = trio.Event()
        self.lost_reason = ""

    def report_lost(self, reason: str) -> None:
        """Tell the owning actor the connection failed (idempotent; the first reason is kept)."""
        if not self.lost.is_set():
            self.lost_reason = reason
            self.lost.set()


class McpClient:
    """Calls tools of one MCP server through whatever connection its actor holds now.

    Lives as long as the server's entry (across reconnects and actor restarts), so the handlers in
    the tool registry keep working whichever connection serves them.

    Args:
        server: the server's name (in every message the model sees).
        timeout: seconds one call may take (the entry's ``timeout``).
    """

    def __init__(self, server: str, timeout: float) -> None:
        self.server = server
        self.timeout = timeout
        self.link: Link | None = None
        # What a call made while there is no link is told (the actor keeps it current).
        self.unavailable_reason = "it is still connecting"
        # The server's tools as it last listed them (kept across a lost connection, as their
        # registrations are): what session hosts register to call through this client.
        self.listed: list[types.Tool] = []

    async def call(self, tool: str, arguments: Mapping[str, Any]) -> ToolResult:
        """Call ``tool`` with ``arguments`` and convert its result.

        Raises:
            McpUnavailable: no connection right now.
            McpCallTimeout: no answer within :attr:`timeout` (the request is cancelled at the server).
            McpConnectionLost: the server died or its endpoint failed during the call.
            McpProtocolError: the server answered with a JSON-RPC error.
            McpToolFailed: the tool answered ``isError``.
        """
        link = self.link
        if link is None or link.lost.is_set():
            raise McpUnavailable(
                f"MCP server {self.server!r} is not connected: {self.unavailable_reason}. "
                "It reconnects by itself; try again in a little while, or do without this tool."
            )
        try:
            with trio.fail_after(self.timeout):
                result: types.CallToolResult = await link.session.call_tool(tool, dict(arguments))
        except trio.TooSlowError:
            raise McpCallTimeout(
                f"MCP tool {tool!r} of server {self.server!r} gave no answer within {self.timeout:g}s; "
                "the call was cancelled. Try a smaller request, or another way."
            ) from None
        except MCPError as exc:
            if exc.code != types.CONNECTION_CLOSED:
                raise McpProtocolError(f"MCP server {self.server!r} refused the call to {tool!r}: {exc.message}") from exc
            raise await self._lost(link, tool, "closed the connection") from exc
        except _TRANSPORT_ERRORS as exc:
            raise await self._lost(link, tool, f"could not be reached ({type(exc).__name__}: {exc})") from exc
        return tool_result(result)

    async def _lost(self, link: Link, tool: str, what: str) -> McpConnectionLost:
        if link.ended is not None:
            # The read side usually closes a moment before the process is reaped: wait for its status.
            with trio.move_on_after(_EXIT_NOTICE_SECONDS):
                await link.ended.wait()
        how = link.describe_end()
        reason = f"{what} during a call to {tool!r}" + (f" (the server {how})" if how else "")
        link.report_lost(reason)
        log.warning("MCP server %s %s", self.server, reason)
        return McpConnectionLost(
            f"MCP server {self.server!r} {reason}. It is restarting; the call's effect is unknown, so check "
            "before repeating it, and retry in a little while or use other tools."
        )
