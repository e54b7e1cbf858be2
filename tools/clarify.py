"""``clarify``: ask the user a question and wait for the answer.

Routed through ``ctx.clarify`` to whoever is attached to the session.  It is
never run beside other tools (see ``tools.parallel``): results finishing while
the user thinks would interleave with the answer.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Final

from tools.dispatch import error_result
from tools.errors import ClarifyUnavailable

if TYPE_CHECKING:
    from tools.context import ToolContext

__all__ = ["CLARIFY_SCHEMA", "MAX_CHOICES", "UNAVAILABLE_MESSAGE", "clarify_handler"]

MAX_CHOICES: Final = 6
UNAVAILABLE_MESSAGE: Final = "Clarify tool is not available in this execution context."

CLARIFY_SCHEMA: Final[dict[str, Any]] = {
    "name": "clarify",
    "description": (
        "Ask the user a question when the request is ambiguous or a decision is theirs to make, and wait "
        f"for the answer. Offer up to {MAX_CHOICES} choices; allow_freetext lets the user answer in their "
        "own words. Do not use it for things you can find out yourself."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "question": {"type": "string", "description": "The question to ask.", "minLength": 1},
            "choices": {
                "type": "array",
                "items": {"type": "string"},
                "maxItems": MAX_CHOICES,
                "description": f"Up to {MAX_CHOICES} suggested answers.",
            },
            "allow_freetext": {
                "type": "boolean",
                "default": True,
                "description": "Accept an answer outside the choices.",
            },
        },
        "required": ["question"],
    },
}


async def clarify_handler(args: dict[str, Any], ctx: ToolContext) -> str:
    """Tool handler for ``clarify``."""
    question = str(args.get("question", "")).strip()
    choices = [str(choice).strip() for choice in args.get("choices") or [] if str(choice).strip()]
    allow_freetext = bool(args.get("allow_freetext", True))
    if not question:
        return error_result("question is empty; ask a complete question.")
    if len(choices) > MAX_CHOICES:
        return error_result(f"Too many choices ({len(choices)}); offer at most {MAX_CHOICES}.")
    if not choices and not allow_freetext:
        return error_result("Give choices, or set allow_freetext=true so the user can answer.")
    if not ctx.interactive:
        return error_result(UNAVAILABLE_MESSAGE)
    try:
        answer = await ctx.clarify(question, choices, allow_freetext)
    except ClarifyUnavailable:
        return error_result(UNAVAILABLE_MESSAGE)
    return json.dumps({"question": question, "answer": answer}, ensure_ascii=False)
