"""Small helpers shared by the tool tests."""

from __future__ import annotations

import json
from typing import Any

from tools.context import ToolContext

OBJECT_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


def schema(description: str = "test tool", **properties: Any) -> dict[str, Any]:
    """A minimal tool schema with the given properties (all optional)."""
    return {"description": description, "parameters": {"type": "object", "properties": properties}}


async def echo_handler(args: dict[str, Any], ctx: ToolContext) -> str:
    """Return the arguments it got, as JSON."""
    return json.dumps({"args": args})
