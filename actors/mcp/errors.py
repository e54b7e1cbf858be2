"""The MCP client's errors.

::

    ToolError (tools.errors)            what the model sees, as {"error": message}
    └── McpCallError                    an MCP tool call did not give a result
        ├── McpUnavailable              the server is not connected (connecting, failed, restarting)
        ├── McpCallTimeout              no answer within the entry's timeout (cancelled at the server)
        ├── McpConnectionLost           the server died, or its endpoint failed, during the call
        ├── McpProtocolError            the server answered the request with a JSON-RPC error
        └── McpToolFailed (convert)     the tool ran and answered isError
    McpConnectError (RuntimeError)      connecting failed: the server actor's, shown in tree/status

Every message names the server and says what the model can do next; SDK, socket and process errors
are translated here, once, at the boundary (``raise ... from exc``).
"""

from __future__ import annotations

from tools.errors import ToolError

__all__ = [
    "McpCallError",
    "McpCallTimeout",
    "McpConnectError",
    "McpConnectionLost",
    "McpProtocolError",
    "McpUnavailable",
]


class McpCallError(ToolError):
    """An MCP tool call that did not give a result."""


class McpUnavailable(McpCallError):
    """The tool's server is not connected right now."""


class McpCallTimeout(McpCallError):
    """The server did not answer within the call's timeout; the request was cancelled."""


class McpConnectionLost(McpCallError):
    """The server's process exited or its endpoint failed while the call was running."""


class McpProtocolError(McpCallError):
    """The server answered the call with a JSON-RPC error."""


class McpConnectError(RuntimeError):
    """The server could not be started, reached, initialised or listed within its connect timeout."""
