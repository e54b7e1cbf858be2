"""Small builders for history messages used across the session-library tests."""

from __future__ import annotations

import json
from typing import Any


def user(text: str = "hi") -> dict[str, Any]:
    """A user message."""
    return {"role": "user", "content": text}


def assistant(text: str | None = "ok", calls: list[tuple[str, str]] | None = None, args: dict[str, Any] | None = None) -> dict[str, Any]:
    """An assistant message, with ``(id, name)`` tool calls when given."""
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args or {})}}
            for call_id, name in calls
        ]
    return message


def tool(call_id: str, content: str = "result", name: str = "terminal") -> dict[str, Any]:
    """A tool result."""
    return {"role": "tool", "tool_call_id": call_id, "name": name, "content": content}


def system(text: str = "You are a test.") -> dict[str, Any]:
    """A system message."""
    return {"role": "system", "content": text}

