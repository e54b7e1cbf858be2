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

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from tools.errors import ClarifyTimedOut, ClarifyUnavailable, ToolInputError
from tools.results import ToolResult

if TYPE_CHECKING:
    from tools.context import ToolContext

__all__ = ["CLARIFY_SCHEMA", "MAX_CHOICES", "TIMEOUT_ANSWER", "UNAVAILABLE_MESSAGE", "clarify_handler", "loosen_choices"]

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


# The keys a model's dict-shaped choice carries its label under, in the order they are tried. ``name`` and
# ``value`` are left out: they tend to hold identifiers, not words a user should pick.
_LABEL_KEYS: Final = ("label", "description", "text", "title")


def loosen_choices(args: Mapping[str, Any]) -> dict[str, Any]:
    """``args`` with ``choices`` read as Hermes reads them, before the schema check.

    Models sometimes send ``[{"label": "staging"}, ...]`` or more than :data:`MAX_CHOICES` choices; as in
    Hermes, a dict-shaped choice becomes its label (a dict without one is dropped), blank choices are
    dropped, and only the first four are offered, rather than the call failing. Anything that is not a
    list is left for the schema check to refuse.
    """
    choices = args.get("choices")
    if not isinstance(choices, list):
        return dict(args)
    labels = [label for label in map(_choice_label, choices) if label]
    return {**args, "choices": labels[:MAX_CHOICES]}


def _choice_label(choice: Any) -> str:
    """The words of one choice: a string as it is, a dict's label, else nothing."""
    if isinstance(choice, str):
        return choice.strip()
    if isinstance(choice, Mapping):
        for key in _LABEL_KEYS:
            value = choice.get(key)
            if isinstance(value, str) and value.strip():
                return value.strip()
        return ""
    return "" if choice is None else str(choice).strip()


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
