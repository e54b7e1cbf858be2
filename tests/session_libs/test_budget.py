"""The iteration budget: consumption, execute_code refunds, grace call and forced summary."""

from __future__ import annotations

import pytest

from actors.session.budget import FORCED_SUMMARY_TEXT, BudgetStep, IterationBudget


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
