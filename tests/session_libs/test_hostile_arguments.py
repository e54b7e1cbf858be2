"""Hostile tool-call arguments: validated into a clear recovery result or repaired, never a crash."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings

from conversation.validation import ToolCallValidator, looks_truncated
from actors.subagent.tool import InvalidDelegation, parse_delegation
from config.delegation import DelegationConfig
from messages.chat import AssistantMessage, ToolCall, message_to_dict
from providers.recovery.json_repair import repair_tool_arguments
from tests.strategies import deeply_nested_json, hostile_frames, huge_integer_json

TOOLS = ["todo", "terminal"]


def _validate(arguments: str) -> Any:
    return ToolCallValidator(TOOLS).validate(AssistantMessage(None, (ToolCall("c1", "todo", arguments),)))


def _error(outcome: Any) -> str:
    return json.loads(outcome.answered["c1"])["error"]


class TestRefusedArguments:
    """Arguments too deep or with too long a number are answered with a result naming the problem."""

    @pytest.mark.parametrize(
        ("arguments", "problem"),
        [
            ('{"todos": ' + "[" * 100_000 + "]" * 100_000 + "}", "the JSON is nested deeper than 100 levels"),
            ('{"todos": ' + "[" * 100_000, "the JSON is nested deeper than 100 levels"),
            ('{"n": ' + "9" * 5000 + "}", "the JSON holds a number of more than 4300 digits"),
        ],
        ids=["deep", "deep-unclosed", "huge-int"],
    )
    def test_answered_not_run(self, arguments: str, problem: str) -> None:
        """Nothing runs; the model is told what was wrong with its arguments."""
        outcome = _validate(arguments)
        assert () == outcome.runnable
        assert problem in _error(outcome)

    @settings(max_examples=50, deadline=None)
    @given(deeply_nested_json())
    def test_repair_gives_up_at_once(self, text: str) -> None:
        """The JSON repair passes answer "{}" for nesting no pass can fix, and never raise."""
        assert "{}" == repair_tool_arguments(text)

    @given(huge_integer_json)
    def test_repair_refuses_huge_numbers(self, number: str) -> None:
        """A number past the conversion limit is not repaired into anything."""
        assert "{}" == repair_tool_arguments('{"n": ' + number + "}")
        assert not looks_truncated('{"n": ' + number + "}")


class TestRepairedArguments:
    """Lone surrogates in arguments reach the tool, and the history, as U+FFFD."""

    def test_escaped_surrogates(self) -> None:
        """JSON escapes of lone halves, in keys and values, are repaired in the runnable call and the message."""
        outcome = _validate(r'{"todos": [{"id": "1", "content": "x\udc80", "status": "pending"}], "k\ud800": 1}')
        (call,) = outcome.runnable
        assert {"todos": [{"id": "1", "content": "x\ufffd", "status": "pending"}], "k\ufffd": 1} == call.arguments
        stored = outcome.message.tool_calls[0].arguments
        stored.encode("utf-8")
        assert call.arguments == json.loads(stored)

    @settings(max_examples=200, deadline=None)
    @given(hostile_frames(b'{"todos":[{"id":"1","content":"x","status":"pending"}]}'))
    def test_never_crashes(self, frame: bytes) -> None:
        """Any hostile argument text is run repaired or answered; what is kept encodes as UTF-8."""
        # As the provider boundary hands it over: text, never bytes.
        outcome = _validate(frame.decode("utf-8", "replace"))
        assert len(outcome.runnable) + len(outcome.answered) == 1
        json.dumps(message_to_dict(outcome.message), ensure_ascii=False).encode("utf-8")
        for call in outcome.runnable:
            json.dumps(call.arguments, ensure_ascii=False).encode("utf-8")


class TestHostileToolText:
    """The session's readers of JSON inside arguments take any text."""

    @pytest.mark.parametrize(
        ("tasks", "message"),
        [("[" * 100_000, "'tasks' is nested deeper than 100 levels"), ("[1,", "'tasks' is not valid JSON")],
    )
    def test_delegation_tasks_string(self, tasks: str, message: str) -> None:
        """delegate_task's tasks given as a JSON string are decoded safely, with the problem named."""
        with pytest.raises(InvalidDelegation, match=message):
            parse_delegation({"tasks": tasks}, DelegationConfig())
