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
        "Ask the user a question when the request is ambiguous, a decision with real trade-offs is theirs "
        "to make, or you want their feedback, and wait for the answer. Offer up to 4 choices, the one you "
        "recommend first; the user can always answer in their own words instead. Without choices the "
        "question is open. Put each option only in `choices`: never list the options inside the question "
        "text, where they cannot be picked (right: question='Which target?', choices=['staging', 'prod']; "
        "wrong: question='Which target? 1) staging 2) prod'). Do not use it to confirm dangerous commands "
        "(the terminal asks for those itself) or for things you can find out yourself; when a choice is "
        "low-stakes, make a sensible one yourself."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "question": {"type": "string", "description": "The question alone, without the options."},
            "choices": {
                "type": "array",
                "items": {"type": "string"},
                "maxItems": MAX_CHOICES,
                "description": (
                    f"Each option as its own element, up to {MAX_CHOICES}, best first; omit only for an "
                    "open question."
                ),
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
