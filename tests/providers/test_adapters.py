"""Every adapter against the scripted provider through the real SDK."""

from __future__ import annotations

import json

import pytest

from messages.chat import message_to_dict
from messages.events import ReasoningDelta, TextDelta
from providers import (
    StreamFinished,
    ToolCallArgumentsDelta,
    ToolCallCompleted,
    ToolCallStarted,
    UsageReported,
)

from .conftest import MODES, TERMINAL_TOOL, adapter_for, collect, request

pytestmark = pytest.mark.parametrize("mode", MODES)


class TestText:
    """A plain answer streams as text deltas and ends with one StreamFinished."""

    async def test_text_chunks_and_message(self, server, pool, mode):
        server.push({"text": "one two three four", "chunks": 4})
        events = await collect(adapter_for(server, pool, mode), request())
        deltas = [e.text for e in events if isinstance(e, TextDelta)]
        assert "".join(deltas) == "one two three four"
        assert len(deltas) == 4
        assert isinstance(events[-1], StreamFinished)
        assert sum(isinstance(e, StreamFinished) for e in events) == 1
        finished = events[-1]
        assert finished.finish_reason == "stop"
        assert message_to_dict(finished.message)["role"] == "assistant"
        assert message_to_dict(finished.message)["content"] == "one two three four"
        assert "tool_calls" not in message_to_dict(finished.message)

    async def test_deltas_are_the_session_event_unstamped(self, server, pool, mode):
        server.push({"text": "one two", "chunks": 2})
        events = await collect(adapter_for(server, pool, mode), request())
        deltas = [e for e in events if type(e) is TextDelta]
        assert [("", 0, "")] * 2 == [(d.session_id, d.seq, d.path) for d in deltas]

    async def test_non_ascii_text_intact(self, server, pool, mode):
        text = "naïve café — 東京 🚀 done"
        server.push({"text": text, "chunks": 9})
        events = await collect(adapter_for(server, pool, mode), request([{"role": "user", "content": "ünïcødé 🙂"}]))
        assert message_to_dict(events[-1].message)["content"] == text
        sent = server.requests[0].body
        assert "ünïcødé 🙂" in str(sent)

    async def test_request_reaches_the_right_endpoint(self, server, pool, mode):
        server.push({"text": "ok"})
        await collect(adapter_for(server, pool, mode), request())
        expected = {
            "chat_completions": "/v1/chat/completions",
            "anthropic_messages": "/v1/messages",
            "codex_responses": "/v1/responses",
        }[mode]
        assert [r.path for r in server.requests] == [expected]
        assert server.requests[0].body["stream"] is True


class TestToolCalls:
    """Tool calls split across many chunks are reassembled, one or several."""

    async def test_single_call_split_across_chunks(self, server, pool, mode):
        args = {"command": "ls -la /tmp", "timeout": 30}
        server.push({"tool_calls": [{"id": "call_a", "name": "terminal", "arguments": args}], "args_chunks": 7})
        events = await collect(adapter_for(server, pool, mode), request(tools=[TERMINAL_TOOL]))
        started = [e for e in events if isinstance(e, ToolCallStarted)]
        pieces = [e.delta for e in events if isinstance(e, ToolCallArgumentsDelta)]
        completed = [e for e in events if isinstance(e, ToolCallCompleted)]
        assert started == [ToolCallStarted(index=0, call_id="call_a", name="terminal")]
        assert len(pieces) == 7
        assert json.loads("".join(pieces)) == args
        assert [(c.call_id, json.loads(c.arguments)) for c in completed] == [("call_a", args)]
        finished = events[-1]
        assert finished.finish_reason == "tool_calls"
        assert message_to_dict(finished.message)["tool_calls"] == [
            {"id": "call_a", "type": "function", "function": {"name": "terminal", "arguments": json.dumps(args)}}
        ]

    async def test_parallel_calls_keep_order_and_ids(self, server, pool, mode):
        calls = [
            {"id": "call_1", "name": "terminal", "arguments": {"command": "pwd"}},
            {"id": "call_2", "name": "read_file", "arguments": {"path": "a.txt"}},
            {"id": "call_3", "name": "terminal", "arguments": {"command": "id"}},
        ]
        server.push({"text": "Running three.", "tool_calls": calls})
        events = await collect(adapter_for(server, pool, mode), request(tools=[TERMINAL_TOOL]))
        completed = [e for e in events if isinstance(e, ToolCallCompleted)]
        assert [(c.index, c.call_id, c.name) for c in completed] == [
            (0, "call_1", "terminal"),
            (1, "call_2", "read_file"),
            (2, "call_3", "terminal"),
        ]
        message = message_to_dict(events[-1].message)
        assert message["content"] == "Running three."
        assert [json.loads(c["function"]["arguments"]) for c in message["tool_calls"]] == [c["arguments"] for c in calls]
        # Each call completes before the StreamFinished, exactly once.
        assert len(completed) == 3
        for index in range(3):
            positions = [
                (i, type(e).__name__)
                for i, e in enumerate(events)
                if isinstance(e, (ToolCallStarted, ToolCallArgumentsDelta, ToolCallCompleted)) and e.index == index
            ]
            kinds = [k for _, k in positions]
            assert kinds[0] == "ToolCallStarted" and kinds[-1] == "ToolCallCompleted"
            assert set(kinds[1:-1]) == {"ToolCallArgumentsDelta"}

    async def test_raw_string_arguments_pass_through_unchanged(self, server, pool, mode):
        server.push({"tool_calls": [{"id": "call_x", "name": "terminal", "arguments": '{"command": "echo hi",}'}]})
        events = await collect(adapter_for(server, pool, mode), request(tools=[TERMINAL_TOOL]))
        assert message_to_dict(events[-1].message)["tool_calls"][0]["function"]["arguments"] == '{"command": "echo hi",}'


class TestReasoning:
    """Reasoning streams as ReasoningDelta and lands in message['reasoning']."""

    async def test_reasoning_then_text(self, server, pool, mode):
        server.push({"reasoning": "Let me think about it.", "signature": "c2lnbmF0dXJl", "text": "Answer."})
        events = await collect(adapter_for(server, pool, mode), request())
        reasoning = "".join(e.text for e in events if isinstance(e, ReasoningDelta))
        assert reasoning == "Let me think about it."
        first_text = next(i for i, e in enumerate(events) if isinstance(e, TextDelta))
        last_reasoning = max(i for i, e in enumerate(events) if isinstance(e, ReasoningDelta))
        assert last_reasoning < first_text
        assert message_to_dict(events[-1].message)["reasoning"] == "Let me think about it."
        assert message_to_dict(events[-1].message)["content"] == "Answer."


class TestUsage:
    """Usage is normalized (prompt includes cache, reasoning tokens kept) and reported once."""

    async def test_usage_figures(self, server, pool, mode):
        usage = {"prompt_tokens": 1000, "completion_tokens": 50, "cache_read_tokens": 600, "cache_write_tokens": 100, "reasoning_tokens": 20}
        if mode == "anthropic_messages":
            # Anthropic reports input excluding the cache; the adapter adds it back.
            usage["prompt_tokens"] = 300
        server.push({"text": "ok", "usage": usage})
        events = await collect(adapter_for(server, pool, mode), request())
        reported = [e for e in events if isinstance(e, UsageReported)]
        assert len(reported) == 1
        got = events[-1].usage
        assert got == reported[0].usage
        assert got.prompt_tokens == 1000
        assert got.completion_tokens == 50
        assert got.cache_read_tokens == 600
        if mode != "chat_completions":
            assert got.cache_write_tokens == 100
        if mode != "anthropic_messages":
            assert got.reasoning_tokens == 20


class TestFinishReasons:
    """Every wire finish reason maps onto the internal vocabulary."""

    @pytest.mark.parametrize("scripted", ["stop", "length", "content_filter", "tool_calls"])
    async def test_finish_reason(self, server, pool, mode, scripted):
        step = {"text": "partial", "finish_reason": scripted}
        if scripted == "tool_calls":
            step["tool_calls"] = [{"id": "call_f", "name": "terminal", "arguments": {}}]
        server.push(step)
        events = await collect(adapter_for(server, pool, mode), request())
        assert events[-1].finish_reason == scripted
