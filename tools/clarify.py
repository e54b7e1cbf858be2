"""``clarify``: ask the user a question and wait for the answer.

Routed through ``ctx.clarify`` to whoever is attached to the session.  It is
never run beside other tools (see ``tools.parallel``): results finishing while
the user thinks would interleave with the answer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from tools.errors import ClarifyUnavailable, ToolInputError
from tools.results import ToolResult

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


async def clarify_handler(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    """Tool handler for ``clarify``.

    Raises:
        ToolInputError: no question, too many choices, or no way to answer.
        ClarifyUnavailable: nobody can answer in this session.
    """
    question = str(args.get("question", "")).strip()
    choices = [str(choice).strip() for choice in args.get("choices") or [] if str(choice).strip()]
    allow_freetext = bool(args.get("allow_freetext", True))
    if not question:
        raise ToolInputError("question is empty; ask a complete question.")
    if len(choices) > MAX_CHOICES:
        raise ToolInputError(f"Too many choices ({len(choices)}); offer at most {MAX_CHOICES}.")
    if not choices and not allow_freetext:
        raise ToolInputError("Give choices, or set allow_freetext=true so the user can answer.")
    if not ctx.interactive:
        raise ClarifyUnavailable(UNAVAILABLE_MESSAGE)
    try:
        answer = await ctx.clarify(question, choices, allow_freetext)
    except ClarifyUnavailable:
        raise ClarifyUnavailable(UNAVAILABLE_MESSAGE) from None
    return ToolResult({"question": question, "answer": answer})
