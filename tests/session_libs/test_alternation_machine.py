"""Random sequences of user messages, tool calls, results, interrupts, steers, compressions and reloads keep the history valid."""

from __future__ import annotations

import json

import trio
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from conversation.budget import GRACE_NOTICE, BudgetStep, IterationBudget, append_budget_note, close_for_forced_summary
from conversation.compression import ContextCompressor
from conversation.errors import CompressionError, EmptySteerError
from conversation.history import check_alternation, close_interrupted_turn, repair_on_load
from conversation.steer import STEER_OPEN, SteerBuffer
from conversation.validation import ToolCallValidator
from config.session import CompressionConfig
from messages.chat import AssistantMessage, ChatMessage, HumanMessage, SystemMessage, ToolCall, ToolMessage, content_text
from providers.metadata import rough_tokens as estimate_tokens
from tests.session_libs.messages import system

TOOLS = ["terminal", "read_file", "execute_code"]
NAMES = st.sampled_from(["terminal", "read_file", "execute_code", "Read-File", "bogus_tool"])
ARGUMENTS = st.sampled_from(["{}", '{"a": 1}', '{"a": 1,}', '{"a": "cut', "", "[1]"])
TEXT = st.text(alphabet="ab \n", max_size=6)


async def _summarize(messages: list[ChatMessage], instructions: str) -> str:
    if len(messages) % 3 == 0:
        raise RuntimeError("auxiliary model unavailable")
    return f"## Active Task\nsummary of {len(messages)} messages"


class SessionHistoryMachine(RuleBasedStateMachine):
    """Drives the session libraries the way the session actor does and checks the history after every step."""

    def __init__(self) -> None:
        super().__init__()
        self.messages: list[ChatMessage] = [system()]
        # rest: turn over; awaiting: a provider call is due; tools: results of the last batch are coming in.
        self.phase = "rest"
        self.pending: list[tuple[str, str]] = []
        self.steers = SteerBuffer()
        self.validator = ToolCallValidator(TOOLS)
        self.compressor = ContextCompressor(
            CompressionConfig(minimum_threshold_tokens=100), context_length=400, summarize=_summarize, estimate_tokens=estimate_tokens
        )
        self.counter = 0
        self.budget = IterationBudget(total=2)

    def _next_id(self) -> str:
        self.counter += 1
        return f"call_{self.counter}"

    def _before_provider_call(self) -> BudgetStep:
        self.steers.deliver(self.messages)
        step = self.budget.begin_call()
        assert step in (BudgetStep.CALL, BudgetStep.GRACE)
        if step is BudgetStep.GRACE:
            append_budget_note(self.messages, GRACE_NOTICE)
        return step

    def _end_turn(self) -> None:
        self.phase = "rest"
        self.budget = IterationBudget(total=2)
        leftover = self.steers.take()
        if leftover is not None:  # the session queues it as the next user message
            self.messages.append(HumanMessage(leftover))
            self.phase = "awaiting"

    @precondition(lambda self: self.phase == "rest")
    @rule(text=TEXT)
    def user_message(self, text: str) -> None:
        self.messages.append(HumanMessage(text or "?"))
        self.phase = "awaiting"

    @precondition(lambda self: self.phase == "awaiting")
    @rule(text=TEXT)
    def assistant_answers(self, text: str) -> None:
        self._before_provider_call()
        self.messages.append(AssistantMessage(text))
        self._end_turn()

    @precondition(lambda self: self.phase == "awaiting")
    @rule(calls=st.lists(st.tuples(NAMES, ARGUMENTS), min_size=1, max_size=4), text=st.none() | TEXT)
    def assistant_calls_tools(self, calls: list[tuple[str, str]], text: str | None) -> None:
        step = self._before_provider_call()
        message = AssistantMessage(text, tuple(ToolCall(self._next_id(), name, arguments) for name, arguments in calls))
        if step is BudgetStep.GRACE:
            close_for_forced_summary(self.messages, message)
            assert self.budget.begin_call() is BudgetStep.FORCE_SUMMARY
            self.messages.append(AssistantMessage("summary of the work"))
            self._end_turn()
            return
        outcome = self.validator.validate(message)
        self.messages.append(outcome.message)
        runnable = {call.id for call in outcome.runnable}
        self.pending = [
            (call.id, outcome.answered.get(call.id, json.dumps({"output": "ran"})))
            for call in outcome.message.tool_calls
        ]
        assert runnable | set(outcome.answered) == {call_id for call_id, _ in self.pending}
        self.phase = "tools"

    @precondition(lambda self: self.phase == "tools")
    @rule()
    def tool_result(self) -> None:
        call_id, content = self.pending.pop(0)
        self.messages.append(ToolMessage(call_id, content))
        if not self.pending:
            self.steers.deliver(self.messages)
            self.phase = "awaiting"

    @rule(text=st.sampled_from(["go left", "  focus on tests ", "", "   "]))
    def steer(self, text: str) -> None:
        before = len(self.steers)
        try:
            self.steers.add(text)
        except EmptySteerError:
            assert not text.strip() and len(self.steers) == before

    @precondition(lambda self: self.phase in ("awaiting", "tools"))
    @rule(partial=st.none() | TEXT, keep_some=st.booleans())
    def interrupt(self, partial: str | None, keep_some: bool) -> None:
        results = {call_id: "[Command interrupted]" for call_id, _ in self.pending[:1]} if keep_some else {}
        self.messages = close_interrupted_turn(
            self.messages, results=results, partial=None if partial is None else AssistantMessage(partial)
        )
        self.pending = []
        self.phase = "rest"
        assert isinstance(self.messages[-1], AssistantMessage)
        self._end_turn()

    @precondition(lambda self: self.phase in ("rest", "awaiting"))
    @rule(focus=st.none() | st.just("tests"))
    def compress(self, focus: str | None) -> None:
        try:
            result = trio.run(lambda: self.compressor.compress(self.messages, focus=focus))
        except CompressionError:
            return
        assert result.messages[-1] == self.messages[-1]
        last_user = next((m for m in reversed(self.messages) if isinstance(m, HumanMessage)), None)
        if last_user is not None:
            assert any(content_text(last_user.content) in content_text(m.content) for m in result.messages if isinstance(m, HumanMessage))
        self.messages = result.messages

    @rule(cut=st.integers(min_value=1, max_value=200))
    def reload_after_crash(self, cut: int) -> None:
        prefix = self.messages[: 1 + cut % len(self.messages)]
        repaired = repair_on_load(prefix)
        check_alternation(repaired)
        assert repair_on_load(repaired) == repaired

    @invariant()
    def history_is_valid(self) -> None:
        check_alternation(self.messages, allow_pending_tool_calls=self.phase == "tools")
        if self.phase == "rest":
            assert isinstance(self.messages[-1], SystemMessage | AssistantMessage)

    @invariant()
    def steers_only_inside_tool_results(self) -> None:
        for message in self.messages:
            if STEER_OPEN in content_text(message.content):
                assert isinstance(message, ToolMessage)


SessionHistoryMachine.TestCase.settings = settings(max_examples=60, stateful_step_count=40, deadline=None)


class TestAlternationMachine(SessionHistoryMachine.TestCase):  # type: ignore[misc,valid-type]  # hypothesis builds TestCase at run time; the checker sees no class
    """Every reachable history passes check_alternation, and repair_on_load fixes any crash prefix."""
