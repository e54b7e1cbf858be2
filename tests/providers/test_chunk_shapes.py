"""The Anthropic and Responses converters read the stream's JSON as plain dicts; hostile shapes do not crash them."""

from __future__ import annotations

from typing import Any

from providers.anthropic_convert import AnthropicChunkConverter
from providers.base import TurnAccumulator
from providers.responses_convert import ResponsesChunkConverter
from providers.types import ToolCallCompleted, ToolCallStarted

HOSTILE: list[Any] = [
    [1, 2, 3],
    "not an object",
    None,
    {"type": "content_block_start", "index": 0, "content_block": "oops"},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": 5}},
    {"type": "content_block_delta", "index": [], "delta": None},
    {"type": "message_start", "message": {"usage": {"input_tokens": "many"}}},
    {"type": "message_delta", "delta": None, "usage": "x"},
    {"type": "response.output_item.added", "output_index": 0, "item": {"type": "function_call", "call_id": 7}},
    {"type": "response.function_call_arguments.delta", "output_index": {}, "delta": None},
    {"type": "response.output_item.done", "item": [], "output_index": 3},
]


def _run(converter: Any, events: list[Any]) -> tuple[list[Any], TurnAccumulator]:
    acc = TurnAccumulator()
    out: list[Any] = []
    for event in events:
        out.extend(converter(event, acc))
    return out, acc


class TestAnthropicEvents:
    """A well-formed stream rebuilds the reply; wrong shapes are skipped, not raised."""

    def test_tool_use_and_thinking(self) -> None:
        events = [
            {"type": "message_start", "message": {"usage": {"input_tokens": 10, "cache_read_input_tokens": 5}}},
            {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": ""}},
            {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "hmm"}},
            {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "sig"}},
            {"type": "content_block_stop", "index": 0},
            {"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "t1", "name": "terminal"}},
            {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": '{"command"'}},
            {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": ': "ls"}'}},
            {"type": "content_block_stop", "index": 1},
            {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 7}},
            {"type": "message_stop"},
        ]
        out, acc = _run(AnthropicChunkConverter(), events)
        assert [type(e) for e in out if isinstance(e, (ToolCallStarted, ToolCallCompleted))] == [ToolCallStarted, ToolCallCompleted]
        assert (acc.finish_reason, acc.done, acc.complete) == ("tool_calls", True, True)
        assert (acc.usage.prompt_tokens, acc.usage.completion_tokens, acc.usage.cache_read_tokens) == (15, 7, 5)
        thinking, tool = acc.extras["anthropic_content"]
        assert thinking == {"type": "thinking", "thinking": "hmm", "signature": "sig"}
        assert tool["input"] == {"command": "ls"}

    def test_hostile_shapes(self) -> None:
        out, acc = _run(AnthropicChunkConverter(), [*HOSTILE, {"type": "message_stop"}])
        assert acc.complete
        assert "".join(acc.text) == ""


class TestResponsesEvents:
    """Function calls and reasoning items are rebuilt (nulls pruned for replay); wrong shapes are skipped."""

    def test_function_call_and_reasoning(self) -> None:
        events = [
            {"type": "response.output_item.added", "output_index": 0, "item": {"type": "function_call", "call_id": "c1", "name": "terminal"}},
            {"type": "response.function_call_arguments.delta", "output_index": 0, "delta": '{"command": "ls"}'},
            {"type": "response.output_item.done", "output_index": 0,
             "item": {"type": "function_call", "call_id": "c1", "name": "terminal", "arguments": '{"command": "ls"}', "status": None}},
            {"type": "response.output_item.done", "output_index": 1,
             "item": {"type": "reasoning", "id": "r1", "summary": [{"type": "summary_text", "text": "x", "extra": None}], "content": None}},
            {"type": "response.completed", "response": {"usage": {"input_tokens": 3, "output_tokens": 4,
                                                                  "output_tokens_details": {"reasoning_tokens": 2}}}},
        ]
        out, acc = _run(ResponsesChunkConverter(), events)
        assert any(isinstance(e, ToolCallCompleted) and e.arguments == '{"command": "ls"}' for e in out)
        call, reasoning = acc.extras["responses_items"]
        assert "status" not in call and reasoning == {"type": "reasoning", "id": "r1", "summary": [{"type": "summary_text", "text": "x"}]}
        assert (acc.finish_reason, acc.complete, acc.usage.reasoning_tokens) == ("tool_calls", True, 2)

    def test_hostile_shapes(self) -> None:
        out, acc = _run(ResponsesChunkConverter(), [*HOSTILE, {"type": "response.completed", "response": "x"}])
        assert acc.complete and acc.usage.prompt_tokens == 0
