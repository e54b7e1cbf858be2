"""Small helpers shared by the tool tests."""

from __future__ import annotations

import json
from typing import Any

import pytest

import tools.redact as redact_module

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


def scans_for_secrets(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The texts redaction looks through for secrets from now on (each :func:`tools.redact.redact_secrets`)."""
    looked: list[str] = []
    spans = redact_module.secret_spans

    def counted(text: str) -> Any:
        looked.append(text)
        return spans(text)

    monkeypatch.setattr(redact_module, "secret_spans", counted)
    return looked
