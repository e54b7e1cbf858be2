"""What the server actors and the probe share about an MCP session: who we are, listing, error text."""

from __future__ import annotations

import mcp_types as types
from mcp import ClientSession

__all__ = ["CLIENT_INFO", "describe_error", "list_all_tools"]

#: How the daemon introduces itself in ``initialize``.
CLIENT_INFO = types.Implementation(name="hermes-actors", version="0.1.0")


async def list_all_tools(session: ClientSession) -> list[types.Tool]:
    """Every tool of the server, following ``tools/list``'s pages."""
    tools: list[types.Tool] = []
    cursor: str | None = None
    while True:
        params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await session.list_tools(params=params)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            return tools


def describe_error(exc: BaseException) -> str:
    """An SDK, socket or process error in one line (an exception group: its first leaf)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, FileNotFoundError):
        return f"cannot start {exc.filename or 'the command'}: no such file or directory"
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}"[:500]
