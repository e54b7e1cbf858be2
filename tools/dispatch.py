"""The one path every tool call takes: the agent loop's and the sandbox's.

``dispatch`` looks the tool up, validates the arguments against its schema,
runs the handler, redacts the result and caps it.  Whatever goes wrong comes
back as a ``{"error": ...}`` JSON string the model can act on; only
cancellation propagates, because cancelling is the caller's decision.

Redaction happens here, once, for every tool (terminal and process output,
execute_code, read_file, search_files, web_extract, MCP): no tool has to
remember it, and nothing downstream (the model, the store, a summary, a log)
sees a result that has not been through it.  It runs before the cap, so a
secret cut in half by the cap is still recognised whole.
"""

from __future__ import annotations

import json
import logging
import traceback
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from messages.untrusted import repair_text
from tools.errors import ArgumentValidationError, CapabilityUnavailable, ClarifyUnavailable
from tools.ansi import redact_output_async
from tools.redact import redact_secrets, redact_tool_result
from tools.validation import validate_arguments

if TYPE_CHECKING:
    from tools.context import ToolContext
    from tools.registry import ToolRegistry

__all__ = ["dispatch", "error_result"]

logger = logging.getLogger(__name__)

_LOG_PREVIEW_CHARS = 200


def error_result(message: str) -> str:
    """The JSON string a tool returns on failure."""
    return json.dumps({"error": repair_text(message)}, ensure_ascii=False)


async def dispatch(
    registry: ToolRegistry,
    name: str,
    args: Any,
    ctx: ToolContext,
    *,
    allowed: Collection[str] | None = None,
) -> str:
    """Run tool ``name`` with ``args`` in ``ctx`` and return its redacted, capped JSON result.

    Never raises except for cancellation: unknown tools, unavailable tools,
    invalid arguments and crashing handlers all produce ``{"error": ...}``.

    Args:
        allowed: the tools this caller may use (a session's toolsets, a sandbox's
            allow-list); others are reported as unknown. None allows every tool.
    """
    # The one place results are finalised: lone surrogates (a file name, a tool's output) are repaired
    # first, then one redaction pass covers every tool.
    result = repair_text(await _call(registry, name, args, ctx, allowed))
    result = await redact_output_async(result, redact_tool_result)
    if logger.isEnabledFor(logging.DEBUG):
        logger.debug("tool %s -> %d chars: %s", name, len(result), result[:_LOG_PREVIEW_CHARS])
    return registry.cap_result(name, result)


async def _call(registry: ToolRegistry, name: str, args: Any, ctx: ToolContext, allowed: Collection[str] | None) -> str:
    """The handler's result, or the error result that replaces it."""
    entry = registry.get(name) if allowed is None or name in allowed else None
    if entry is None or not registry.is_available(name):
        names = registry.names() if allowed is None else sorted(n for n in allowed if n in registry)
        available = ", ".join(n for n in names if registry.is_available(n))
        if entry is None:
            return error_result(f"Unknown tool: {name}. Available: {available}")
        return error_result(f"Tool {name} is not available right now. Available: {available}")
    try:
        checked = validate_arguments(name, args, entry.schema.get("parameters", {}))
    except ArgumentValidationError as exc:
        logger.info("tool %s rejected arguments: %s", name, redact_secrets(str(exc)))
        return error_result(str(exc))
    try:
        result = await entry.handler(checked, ctx)
    except ClarifyUnavailable:
        return error_result("Clarify tool is not available in this execution context.")
    except CapabilityUnavailable as exc:
        return error_result(f"{name} is not available: {exc}")
    except Exception as exc:
        # A crashing handler must not take the turn (or the session) down with it.
        # Log the traceback as redacted text: exception messages can carry secrets.
        logger.error("tool %s crashed:\n%s", name, redact_secrets("".join(traceback.format_exception(exc))))
        return error_result(f"{name} failed: {type(exc).__name__}: {exc}")
    if not isinstance(result, str):
        logger.error("tool %s returned %s instead of a JSON string", name, type(result).__name__)
        result = json.dumps(result, ensure_ascii=False, default=str)
    return result
