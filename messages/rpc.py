"""Messages of the sandbox RPC conversation: the execute_code child asks, the session answers.

The child's generated ``hermes_tools`` stub writes these as JSON lines (tag field ``"type"`` holding
the class name) on the sandbox's Unix socket; the RPC server decodes them with the project codec. A
connection starts with the run's token on a line of its own, before any frame (the server checks it
before it decodes anything), so the messages do not carry it.
"""

from __future__ import annotations

from typing import Any

import attrs


@attrs.frozen
class RpcRequest:
    """A tool call made by the sandboxed script.

    Attributes:
        id: Request id chosen by the stub, unique per connection; echoed in the response.
        tool: Name of the tool to run.
        args: The tool's keyword arguments, as JSON.
    """

    id: int
    tool: str
    args: dict[str, Any]


@attrs.frozen
class RpcResponse:
    """The answer to one :class:`RpcRequest`.

    Exactly one of ``result`` (the tool's own result text, usually JSON) and ``error`` (a refusal by the
    sandbox: unknown or excluded tool, call limit, timeout, bad token, malformed frame) is set. A frame
    that could not be read at all, and a refused connection, are answered with ``id`` 0.
    """

    id: int
    result: str | None = None
    error: str | None = None


RpcMessage = RpcRequest | RpcResponse
