"""The iteration budget of one turn: how many provider calls it may make (docs/DECISIONS.md#d-iteration-budget).

Counted between provider calls, when nothing runs. Each call consumes one unit; an iteration whose only
tools were ``execute_code`` is refunded (a script's RPC calls should not eat the budget). When the budget
runs out the model is told once and gets one grace call; if it still calls tools, the forced summary
request follows, and after that the turn stops. There are no warnings before exhaustion: they made
models abandon long tasks early.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence

import attrs

from conversation.errors import HistoryInvariantError
from messages.chat import AssistantMessage, ChatMessage, HumanMessage, ToolMessage, append_text

DEFAULT_MAX_ITERATIONS = 90
REFUNDABLE_TOOL = "execute_code"

GRACE_NOTICE = (
    "[Iteration limit reached: this is your last response in this turn. Do not start new work; "
    "answer the user with what you have so far.]"
)
FORCED_SUMMARY_TEXT = "You have reached your iteration limit. Please summarize what you have accomplished so far."


def skipped_tool_text(name: str) -> str:
    """The result recorded for a call the model asked for after its iteration limit, which is not run."""
    return f"[Tool execution skipped — {name} was not run because the iteration limit was reached]"


def append_budget_note(messages: list[ChatMessage], text: str) -> None:
    """Add ``text`` to the last message, which must be a tool result or a user message.

    Budget notices ride on the message the model is about to answer, so no extra user message breaks
    role alternation in the middle of a tool loop.

    Raises:
        HistoryInvariantError: when the history does not end on a tool or user message.
    """
    last = messages[-1] if messages else None
    if not isinstance(last, ToolMessage | HumanMessage):
        raise HistoryInvariantError("a budget note needs a tool result or user message to attach to", -1)
    messages[-1] = attrs.evolve(last, content=append_text(last.content, text))


def close_for_forced_summary(messages: list[ChatMessage], response: AssistantMessage) -> None:
    """Record a grace-call ``response`` that still asked for tools, and ask for the summary instead.

    Every call gets :func:`skipped_tool_text` and the last result carries :data:`FORCED_SUMMARY_TEXT`;
    the session then makes its final call without tools.
    """
    messages.append(response)
    for call in response.tool_calls:
        messages.append(ToolMessage(call.id, skipped_tool_text(call.name), call.name))
    append_budget_note(messages, FORCED_SUMMARY_TEXT)


class BudgetStep(enum.Enum):
    """What the next provider call is allowed to be."""

    # An ordinary call; one unit was consumed.
    CALL = "call"
    # The budget just ran out: add GRACE_NOTICE and make one more call.
    GRACE = "grace"
    # The grace call still asked for tools: add FORCED_SUMMARY_TEXT and call without tools.
    FORCE_SUMMARY = "force_summary"
    # Nothing more may be called; end the turn with what exists.
    STOP = "stop"


@attrs.frozen
class BudgetStatistics:
    """A snapshot of an :class:`IterationBudget` for inspection."""

    total: int
    used: int
    remaining: int
    refunds: int
    step: str | None


@attrs.define
class IterationBudget:
    """Provider-call budget of one turn (a subagent has its own)."""

    total: int = attrs.field(default=DEFAULT_MAX_ITERATIONS, validator=[attrs.validators.instance_of(int), attrs.validators.gt(0)])
    used: int = 0
    refunds: int = 0
    # Invariant: moves only forward: None -> GRACE -> FORCE_SUMMARY -> STOP.
    _last_step: BudgetStep | None = None

    @property
    def remaining(self) -> int:
        """Units left before the grace sequence starts."""
        return max(self.total - self.used, 0)

    def begin_call(self) -> BudgetStep:
        """Account for the provider call about to be made and say what kind it must be."""
        if self.remaining > 0 and self._last_step is None:
            self.used += 1
            return BudgetStep.CALL
        self._last_step = {
            None: BudgetStep.GRACE,
            BudgetStep.GRACE: BudgetStep.FORCE_SUMMARY,
        }.get(self._last_step, BudgetStep.STOP)
        return self._last_step

    def settle_iteration(self, tool_names: Sequence[str]) -> bool:
        """Refund the last call when the tools it ran were all ``execute_code``.

        Returns:
            True when a unit was refunded.
        """
        if not tool_names or any(name != REFUNDABLE_TOOL for name in tool_names):
            return False
        if self.used == 0 or self._last_step is not None:
            return False
        self.used -= 1
        self.refunds += 1
        return True

    def statistics(self) -> BudgetStatistics:
        """A frozen snapshot for the session's inspection report."""
        return BudgetStatistics(
            total=self.total,
            used=self.used,
            remaining=self.remaining,
            refunds=self.refunds,
            step=None if self._last_step is None else self._last_step.value,
        )
