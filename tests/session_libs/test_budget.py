"""The iteration budget: consumption, execute_code refunds, grace call and forced summary."""

from __future__ import annotations

import pytest

from conversation.budget import (
    FORCED_SUMMARY_TEXT,
    GRACE_NOTICE,
    BudgetStep,
    IterationBudget,
    append_budget_note,
    close_for_forced_summary,
    skipped_tool_text,
)
from conversation.errors import HistoryInvariantError
from conversation.history import check_alternation
from messages.chat import TextPart, ToolMessage
from tests.session_libs.messages import assistant, tool, user


class TestIterationBudget:
    """Each call consumes one unit; exhaustion gives one grace call, then a forced summary, then stop."""

    def test_default_is_ninety(self) -> None:
        assert IterationBudget().total == 90

    def test_sequence_after_exhaustion(self) -> None:
        budget = IterationBudget(total=2)
        steps = [budget.begin_call() for _ in range(6)]
        assert steps == [
            BudgetStep.CALL,
            BudgetStep.CALL,
            BudgetStep.GRACE,
            BudgetStep.FORCE_SUMMARY,
            BudgetStep.STOP,
            BudgetStep.STOP,
        ]
        assert budget.statistics().remaining == 0 and budget.statistics().step == "stop"

    def test_forced_summary_text_exact(self) -> None:
        assert FORCED_SUMMARY_TEXT == "You have reached your iteration limit. Please summarize what you have accomplished so far."

    def test_execute_code_only_iteration_refunded(self) -> None:
        budget = IterationBudget(total=1)
        assert budget.begin_call() is BudgetStep.CALL
        assert budget.settle_iteration(["execute_code", "execute_code"])
        assert budget.remaining == 1 and budget.refunds == 1
        assert budget.begin_call() is BudgetStep.CALL

    @pytest.mark.parametrize("tools", [[], ["terminal"], ["execute_code", "read_file"]])
    def test_other_iterations_not_refunded(self, tools: list[str]) -> None:
        budget = IterationBudget(total=3)
        budget.begin_call()
        assert not budget.settle_iteration(tools)
        assert budget.remaining == 2

    def test_no_refund_during_grace(self) -> None:
        budget = IterationBudget(total=1)
        budget.begin_call()
        assert budget.begin_call() is BudgetStep.GRACE
        assert not budget.settle_iteration(["execute_code"])
        assert budget.begin_call() is BudgetStep.FORCE_SUMMARY

    def test_invalid_total_rejected(self) -> None:
        with pytest.raises(ValueError):
            IterationBudget(total=0)


class TestBudgetNotes:
    """Grace notice and forced summary attach to the last tool result, keeping alternation."""

    def test_grace_notice_on_tool_result(self) -> None:
        history = [user(), assistant(None, [("a", "terminal")]), tool("a", "out")]
        append_budget_note(history, GRACE_NOTICE)
        assert history[-1].content == f"out\n\n{GRACE_NOTICE}"
        check_alternation(history)

    def test_note_as_text_part(self) -> None:
        history = [user(), assistant(None, [("a", "t")]), ToolMessage("a", (TextPart("x"),))]
        append_budget_note(history, GRACE_NOTICE)
        assert history[-1].content[-1] == TextPart(GRACE_NOTICE)

    def test_note_needs_tool_or_user(self) -> None:
        with pytest.raises(HistoryInvariantError):
            append_budget_note([user(), assistant()], GRACE_NOTICE)

    def test_forced_summary_closes_calls(self) -> None:
        history = [user(), assistant(None, [("a", "terminal")]), tool("a")]
        close_for_forced_summary(history, assistant(None, [("b", "read_file"), ("c", "terminal")]))
        assert history[-2].content == skipped_tool_text("read_file")
        assert history[-1].content == f"{skipped_tool_text('terminal')}\n\n{FORCED_SUMMARY_TEXT}"
        check_alternation(history)
