"""Small builders for history messages used across the session-library tests."""

from __future__ import annotations

import json
from typing import Any

from messages.chat import AssistantMessage, HumanMessage, SystemMessage, ToolCall, ToolMessage


def user(text: str = "hi") -> HumanMessage:
    """A user message."""
    return HumanMessage(text)


def assistant(text: str | None = "ok", calls: list[tuple[str, str]] | None = None, args: dict[str, Any] | None = None) -> AssistantMessage:
    """An assistant message, with ``(id, name)`` tool calls when given."""
    return AssistantMessage(text, tuple(ToolCall(call_id, name, json.dumps(args or {})) for call_id, name in calls or ()))


def tool(call_id: str, content: str = "result", name: str = "terminal") -> ToolMessage:
    """A tool result."""
    return ToolMessage(call_id, content, name)


def system(text: str = "You are a test.") -> SystemMessage:
    """A system message."""
    return SystemMessage(text)
