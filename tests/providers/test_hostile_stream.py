"""Hostile model output through the real SDKs: lone surrogates are repaired as the stream is read."""

from __future__ import annotations

import json

import pytest

from messages.chat import message_to_dict
from messages.events import ReasoningDelta, TextDelta
from providers import StreamFinished
from providers.types import ToolCallArgumentsDelta, ToolCallCompleted

from .conftest import MODES, TERMINAL_TOOL, adapter_for, collect, request

pytestmark = pytest.mark.parametrize("mode", MODES)


class TestSurrogatesInTheStream:
    """Text, reasoning and tool-call arguments holding lone surrogates arrive as U+FFFD, in every event."""

    async def test_text_reasoning_and_arguments(self, server, pool, mode):
        server.push({
            "text": "bad \udc80 text \ud800 end",
            "reasoning": "think \udfff hard",
            "tool_calls": [{"id": "call_a", "name": "terminal", "arguments": '{"command": "echo \ud83d x"}'}],
            "args_chunks": 5,
        })
        events = await collect(adapter_for(server, pool, mode), request(tools=[TERMINAL_TOOL]))
        deltas = [e.text for e in events if isinstance(e, TextDelta | ReasoningDelta)]
        pieces = [e.delta for e in events if isinstance(e, ToolCallArgumentsDelta)]
        for text in deltas + pieces:
            text.encode("utf-8")
        finished = events[-1]
        assert isinstance(finished, StreamFinished)
        assert "bad \ufffd text \ufffd end" == message_to_dict(finished.message)["content"]
        assert "think \ufffd hard" == message_to_dict(finished.message)["reasoning"]
        completed = [e for e in events if isinstance(e, ToolCallCompleted)]
        assert {"command": "echo \ufffd x"} == json.loads(completed[0].arguments)
        json.dumps(message_to_dict(finished.message), ensure_ascii=False).encode("utf-8")
