"""A small MCP server for the tests, written with the SDK's own server side (``MCPServer``).

Run as a separate process (the SDK's server runs on anyio's asyncio backend here):

    python toy_server.py stdio [--hang]
    python toy_server.py http PORT [--hang]

Tools: ``echo`` (read-only), ``add``, ``slow`` (sleeps, and records a cancellation it receives),
``crash`` (the process exits mid-call), ``picture`` (an image and a text), ``fail`` (an ``isError``
result), ``grow`` (adds a tool ``extra`` and tells the client its tool list changed),
``doc`` (an embedded resource).  ``--hang`` sleeps before serving: a server that never answers.
"""

from __future__ import annotations

import base64
import os
import sys
import time

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.utilities.types import Image
from mcp_types import EmbeddedResource, TextResourceContents, ToolAnnotations

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)

server = MCPServer("toy")
# Where ``slow`` notes that it was cancelled (the test reads it back); ``<MARK>.started`` once it runs.
MARK = os.environ.get("TOY_CANCEL_MARK", "")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
async def slow(seconds: float) -> str:
    """Sleep for a while, then answer."""
    if MARK:
        # A test cancels once the call is running here, not after a guess at how long that takes.
        with open(MARK + ".started", "w", encoding="utf-8") as f:
            f.write("started")
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        if MARK:
            with open(MARK, "w", encoding="utf-8") as f:
                f.write("cancelled")
        raise
    return "slept"


@server.tool()
def crash() -> str:
    """Kill this server process in the middle of the call."""
    os._exit(3)


@server.tool()
def picture() -> list:
    """A one-pixel PNG and a caption."""
    return [Image(data=PNG, format="png"), "a red pixel"]


@server.tool()
def doc() -> EmbeddedResource:
    """An embedded text resource."""
    return EmbeddedResource(
        type="resource", resource=TextResourceContents(uri="file:///notes.txt", mime_type="text/plain", text="notes body")
    )


@server.tool()
def fail(reason: str) -> str:
    """Always fails with the given reason."""
    raise ToolError(f"refused: {reason}")


@server.tool()
async def grow(ctx: Context) -> str:
    """Add the tool ``extra`` and notify the client."""

    def extra() -> str:
        """A tool that appeared later."""
        return "extra!"

    server.add_tool(extra, name="extra")
    await ctx.session.send_tool_list_changed()
    return "grown"


def main() -> None:
    transport = sys.argv[1]
    if "--hang" in sys.argv:
        time.sleep(3600)
    if transport == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))


if __name__ == "__main__":
    main()
