"""Reading JSON from a peer as plain dicts, where any value may have any shape (a hostile or broken server).

The Anthropic and Responses converters read stream events through these instead of the SDKs' models, and
the messaging platforms read their updates and events through them: a wrong shape reads as absent instead
of raising out of the reader.
"""

from __future__ import annotations

from typing import Any

__all__ = ["wire_int", "wire_object", "wire_text"]


def wire_object(value: Any) -> dict[str, Any]:
    """A JSON object, or an empty one for anything else."""
    return value if isinstance(value, dict) else {}


def wire_text(value: Any) -> str:
    """A JSON string, or an empty one for anything else."""
    return value if isinstance(value, str) else ""


def wire_int(value: Any) -> int | None:
    """A JSON integer (a count, a block or item position); None for anything else."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None
