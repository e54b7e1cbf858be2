"""Small helpers shared by the tool tests."""

from __future__ import annotations

import json
from typing import Any

from tools.context import ToolContext
from tools.errors import ToolError
from tools.registry import Handler
from tools.results import ToolReply, ToolResult

OBJECT_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


def schema(description: str = "test tool", **properties: Any) -> dict[str, Any]:
    """A minimal tool schema with the given properties (all optional)."""
    return {"description": description, "parameters": {"type": "object", "properties": properties}}


async def echo_handler(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    """Return the arguments it got."""
    return ToolResult({"args": args})


async def model_view(handler: Handler, args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    """What the model reads of one handler call: the rendered result, or the failure dispatch renders
    for a :class:`ToolError` (``{"error": message, **details}``)."""
    try:
        text = (await handler(args, ctx)).render()
    except ToolError as exc:
        text = ToolReply.failure(str(exc), **exc.details).text
    return json.loads(text)
