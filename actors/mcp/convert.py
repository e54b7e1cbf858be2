"""MCP's shapes to the project's: a tool's schema to a registry schema, a call's result to a ToolResult.

The tool layer speaks OpenAI-style JSON schemas and JSON results the model reads as text; MCP tools
describe themselves with JSON Schema too, and answer with a list of content blocks. Providers take
text in a tool result, so an image or audio block becomes a line that says what it was (its type and
size) rather than kilobytes of base64 the model cannot see; a resource keeps its URI and its text.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any

import mcp_types as types

from actors.mcp.errors import McpCallError
from tools.results import ToolResult

__all__ = ["McpSchemaError", "McpToolFailed", "is_read_only", "tool_result", "tool_schema"]

# Keys some servers put in an input schema that providers refuse at the top of a function's parameters.
_DROPPED_TOP_KEYS = ("$schema", "$id", "title")


class McpSchemaError(ValueError):
    """A server's tool has an input schema that is not a JSON object schema (the tool is skipped)."""


class McpToolFailed(McpCallError):
    """The server ran the tool and answered ``isError``: the model sees the server's text."""


def tool_schema(server: str, tool: types.Tool) -> dict[str, Any]:
    """The registry schema (``description``, ``parameters``) of one MCP ``tool`` of ``server``.

    Raises:
        McpSchemaError: the input schema is not an object schema.
    """
    raw = dict(tool.input_schema or {})
    kind = raw.get("type", "object")
    if kind != "object":
        raise McpSchemaError(f"tool {tool.name!r} of MCP server {server!r} takes {kind!r}, not an object")
    parameters = {key: value for key, value in raw.items() if key not in _DROPPED_TOP_KEYS}
    parameters["type"] = "object"
    if not isinstance(parameters.get("properties"), Mapping):
        parameters["properties"] = {}
    description = tool.description or tool.title or f"The {tool.name} tool of the MCP server {server}."
    return {"description": description, "parameters": parameters}


def is_read_only(tool: types.Tool) -> bool:
    """Whether the server marks ``tool`` read-only (``annotations.readOnlyHint``): only then it may run in parallel."""
    return bool(tool.annotations is not None and tool.annotations.read_only_hint)


def _size(data: str) -> int:
    try:
        return len(base64.b64decode(data, validate=False))
    except (binascii.Error, ValueError):
        return len(data)


def _resource(block: types.EmbeddedResource) -> dict[str, Any]:
    contents = block.resource
    entry: dict[str, Any] = {"uri": str(contents.uri)}
    if contents.mime_type:
        entry["mime_type"] = contents.mime_type
    if isinstance(contents, types.TextResourceContents):
        entry["text"] = contents.text
    else:
        entry["bytes"] = _size(contents.blob)
    return entry


def tool_result(result: types.CallToolResult) -> ToolResult:
    """The tool result the model sees for an MCP call's ``result``.

    ``{"result": text}`` (Hermes's shape), with ``media`` (images, audio) and ``resources`` beside it when the
    server sent any, and the server's ``structured`` content when it sent no text.

    Raises:
        McpToolFailed: the server answered ``isError``; the message is its text.
    """
    texts: list[str] = []
    media: list[dict[str, Any]] = []
    resources: list[dict[str, Any]] = []
    for block in result.content:
        if isinstance(block, types.TextContent):
            texts.append(block.text)
        elif isinstance(block, (types.ImageContent, types.AudioContent)):
            media.append({"type": block.type, "mime_type": block.mime_type, "bytes": _size(block.data)})
            texts.append(f"[{block.type}: {block.mime_type}, {media[-1]['bytes']} bytes]")
        elif isinstance(block, types.EmbeddedResource):
            resources.append(_resource(block))
        elif isinstance(block, types.ResourceLink):
            link = {"uri": str(block.uri), "name": block.name}
            if block.mime_type:
                link["mime_type"] = block.mime_type
            resources.append(link)
    text = "\n".join(texts)
    if result.is_error:
        raise McpToolFailed(text or "the MCP tool reported an error without a message")
    payload: dict[str, Any] = {"result": text}
    if media:
        payload["media"] = media
    if resources:
        payload["resources"] = resources
    if not texts and result.structured_content is not None:
        payload["structured"] = result.structured_content
    return ToolResult(payload)
