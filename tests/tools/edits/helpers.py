"""The caller shared by the write_file / patch tests."""

from __future__ import annotations

import json
from typing import Any

from tools.dispatch import dispatch
from tools.registry import ToolRegistry
from tools.testing import LocalToolContext

__all__ = ["call"]

async def call(registry: ToolRegistry, ctx: LocalToolContext, tool: str, **args: Any) -> dict[str, Any]:
    """What the model reads of one call of ``tool`` through dispatch (validation, redaction and all)."""
    return json.loads((await dispatch(registry, tool, args, ctx)).text)
