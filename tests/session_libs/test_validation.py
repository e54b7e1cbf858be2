"""Tool-call validation: name repair, argument repair and recovery results, dedupe, delegate cap, retry limits."""

from __future__ import annotations

import json

import pytest

from conversation.history import check_alternation
from conversation.validation import MAX_INVALID_RESPONSES, PlannedCall, ToolCallValidator, looks_truncated
from messages.chat import AssistantMessage, HumanMessage, ToolCall, ToolMessage

TOOLS = ["read_file", "terminal", "web_search", "delegate_task"]


def _message(*calls: tuple[str, str, str]) -> AssistantMessage:
    return AssistantMessage(None, tuple(ToolCall(i, n, a) for i, n, a in calls))


def _error(result: str) -> str:
    return json.loads(result)["error"]


class TestNames:
    """Misspelled names are repaired; unknown ones are answered with the real list."""

    def test_fuzzy_repair_rewrites_message(self) -> None:
        outcome = ToolCallValidator(TOOLS).validate(_message(("1", "web_serach", '{"q": "x"}'), ("2", "Read-File", "{}")))
        assert [c.name for c in outcome.runnable] == ["web_search", "read_file"]
        assert [c.name for c in outcome.message.tool_calls] == ["web_search", "read_file"]
        assert len(outcome.repairs) == 2 and not outcome.answered

    def test_unknown_name_answered_with_available_tools(self) -> None:
        outcome = ToolCallValidator(TOOLS).validate(_message(("1", "launch_rocket", "{}")))
        assert outcome.runnable == ()
        assert _error(outcome.answered["1"]) == (
            "Unknown tool 'launch_rocket'. Available tools: delegate_task, read_file, terminal, web_search. "
            "Call one of them by its exact name."
        )
        assert outcome.message.tool_calls[0].name == "launch_rocket"

    def test_gives_up_after_three_retries(self) -> None:
        validator = ToolCallValidator(TOOLS)
        verdicts = [validator.validate(_message(("1", "nope", "{}"))).gave_up for _ in range(MAX_INVALID_RESPONSES + 1)]
        assert verdicts[:3] == [None, None, None]
        assert verdicts[3] is not None and "unknown tools" in verdicts[3]

    def test_good_response_resets_streak(self) -> None:
        validator = ToolCallValidator(TOOLS)
        for _ in range(3):
            validator.validate(_message(("1", "nope", "{}")))
        validator.validate(_message(("1", "terminal", "{}")))
        assert validator.validate(_message(("1", "nope", "{}"))).gave_up is None


class TestArguments:
    """Empty means {}; malformed JSON is repaired; cut-off or hopeless JSON gets a recovery result."""

    @pytest.mark.parametrize("raw", ["", "   "])
    def test_empty_is_empty_object(self, raw: str) -> None:
        outcome = ToolCallValidator(TOOLS).validate(_message(("1", "terminal", raw)))
        assert outcome.runnable == (PlannedCall("1", "terminal", {}),)
        assert outcome.message.tool_calls[0].arguments == "{}"

    def test_trailing_comma_repaired_and_message_valid_json(self) -> None:
        outcome = ToolCallValidator(TOOLS).validate(_message(("1", "read_file", '{"path": "a.py",}')))
        assert outcome.runnable[0].arguments == {"path": "a.py"}
        assert json.loads(outcome.message.tool_calls[0].arguments) == {"path": "a.py"}
        assert "repaired" in outcome.repairs[0]

    def test_truncated_arguments_not_run(self) -> None:
        outcome = ToolCallValidator(TOOLS).validate(_message(("1", "terminal", '{"command": "cat > f <<EOF\nlots')))
        assert outcome.runnable == ()
        assert "cut off" in _error(outcome.answered["1"])

    def test_length_finish_marks_unparseable_as_truncated(self) -> None:
        outcome = ToolCallValidator(TOOLS).validate(_message(("1", "terminal", '{"a": 1,}')), finish_reason="length")
        assert "cut off" in _error(outcome.answered["1"])

    def test_unrepairable_and_non_object(self) -> None:
        outcome = ToolCallValidator(TOOLS).validate(_message(("1", "terminal", "not json at all }"), ("2", "terminal", "[1, 2]")))
        assert outcome.runnable == ()
        assert "not a valid JSON object" in _error(outcome.answered["1"])
        assert "got a JSON list" in _error(outcome.answered["2"])

    def test_gives_up_after_three_bad_argument_responses(self) -> None:
        validator = ToolCallValidator(TOOLS)
        verdicts = [validator.validate(_message(("1", "terminal", "[]"))).gave_up for _ in range(4)]
        assert verdicts[:3] == [None] * 3 and "arguments" in (verdicts[3] or "")

    def test_truncation_detection(self) -> None:
        assert looks_truncated('{"a": "unterminated')
        assert looks_truncated('{"a": [1, 2')
        assert not looks_truncated('{"a": 1,}')


class TestDedupeAndDelegate:
    """Identical calls run once; only one delegate_task runs per response."""

    def test_identical_calls_deduplicated_by_canonical_args(self) -> None:
        outcome = ToolCallValidator(TOOLS).validate(
            _message(("1", "read_file", '{"path": "a", "limit": 5}'), ("2", "read_file", '{"limit":5,"path":"a"}'), ("3", "read_file", '{"path": "b"}'))
        )
        assert [c.id for c in outcome.runnable] == ["1", "3"]
        assert "identical to call 1" in _error(outcome.answered["2"])

    def test_one_delegate_per_response(self) -> None:
        outcome = ToolCallValidator(TOOLS).validate(
            _message(("1", "delegate_task", '{"goal": "a"}'), ("2", "delegate_task", '{"goal": "b"}'), ("3", "terminal", "{}"))
        )
        assert [c.id for c in outcome.runnable] == ["1", "3"]
        assert "Only one delegate_task" in _error(outcome.answered["2"])

    def test_every_call_answered_or_runnable(self) -> None:
        message = _message(("1", "nope", "{}"), ("2", "terminal", "{}"), ("3", "terminal", "{}"), ("4", "terminal", "[]"))
        outcome = ToolCallValidator(TOOLS).validate(message)
        ids = {c.id for c in outcome.runnable} | set(outcome.answered)
        assert ids == {"1", "2", "3", "4"} and not ({c.id for c in outcome.runnable} & set(outcome.answered))
        results = [ToolMessage(i, "x") for i in ("1", "2", "3", "4")]
        check_alternation([HumanMessage("q"), outcome.message, *results])
        assert message.tool_calls[0].name == "nope"
