"""``clarify``: ask the user a question and wait for the answer, as Hermes Agent's tool does.

Routed through ``ctx.clarify`` to whoever is attached to the session. The model offers at most
:data:`MAX_CHOICES` answers, best first; the user may always answer in their own words instead (the
clients show that as an extra "Other" choice). A question nobody answers in time (``clarify.timeout``
in the CLI, ``agent.clarify_timeout`` on chat platforms, as in Hermes) answers the model with
:data:`TIMEOUT_ANSWER` as the user's response, telling it to decide by its own judgement and go on;
the result keeps Hermes's three fields, with no flag of its own. It is never run
beside other tools (see ``tools.parallel``): results finishing while the user thinks would interleave
with the answer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from tools.errors import ClarifyTimedOut, ClarifyUnavailable, ToolInputError
from tools.results import ToolResult

if TYPE_CHECKING:
    from tools.context import ToolContext

__all__ = ["CLARIFY_SCHEMA", "MAX_CHOICES", "TIMEOUT_ANSWER", "UNAVAILABLE_MESSAGE", "clarify_handler"]

MAX_CHOICES: Final = 4
UNAVAILABLE_MESSAGE: Final = "Clarify tool is not available in this execution context."
TIMEOUT_ANSWER: Final = (
    "The user did not answer within the time allowed. Make the choice yourself, using your best judgement, "
    "and carry on."
)

CLARIFY_SCHEMA: Final[dict[str, Any]] = {
    "name": "clarify",
    "description": (
        "Ask the user a question when the request is ambiguous or a decision is theirs to make, and wait "
        f"for the answer. Offer up to {MAX_CHOICES} choices, the one you recommend first; the user can always "
        "answer in their own words instead. Without choices the question is open. Do not use it for things "
        "you can find out yourself."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "question": {"type": "string", "description": "The question to ask.", "minLength": 1},
            "choices": {
                "type": "array",
                "items": {"type": "string"},
                "maxItems": MAX_CHOICES,
                "description": f"Up to {MAX_CHOICES} suggested answers, best first.",
            },
        },
        "required": ["question"],
    },
}


async def clarify_handler(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    """Tool handler for ``clarify``: ``{question, choices_offered, user_response}``.

    Raises:
        ToolInputError: an empty question.
        ClarifyUnavailable: nobody can answer in this session.
    """
    question = str(args.get("question", "")).strip()
    choices = [str(choice).strip() for choice in args.get("choices") or [] if str(choice).strip()]
    if not question:
        raise ToolInputError("question is empty; ask a complete question.")
    if not ctx.interactive:
        raise ClarifyUnavailable(UNAVAILABLE_MESSAGE)
    try:
        response = (await ctx.clarify(question, choices, True)).strip()
    except ClarifyUnavailable:
        raise ClarifyUnavailable(UNAVAILABLE_MESSAGE) from None
    except ClarifyTimedOut:
        response = TIMEOUT_ANSWER
    return ToolResult({"question": question, "choices_offered": choices or None, "user_response": response})
