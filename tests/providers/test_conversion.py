"""Conversion tables between the internal history and each wire format, both ways."""

from __future__ import annotations

import json

import attrs
import pytest


from messages.chat import message_to_dict, messages_from_dicts
from providers._raw import encode_body
from providers.anthropic_convert import to_anthropic_messages, to_anthropic_tools
from providers.anthropic_messages import build_anthropic_kwargs
from providers.caching import apply_system_and_3, cache_marker
from providers.base import TurnAccumulator
from providers.chat_completions import build_chat_kwargs, convert_chat_chunk, to_chat_messages
from providers.codex_responses import build_responses_kwargs
from providers.recovery.history import strip_reasoning
from providers.responses_convert import to_responses_input, to_responses_tools
from store.codec import RawJson, encode_raw

from .conftest import TERMINAL_TOOL, adapter_for, collect, request


def _call(call_id: str, name: str, args: dict) -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


HISTORY = [
    {"role": "system", "content": "You are helpful."},
    {"role": "user", "content": "List files then read one."},
    {
        "role": "assistant",
        "content": "Doing both.",
        "reasoning": "plan",
        "anthropic_content": [
            {"type": "thinking", "thinking": "plan", "signature": "SIG1"},
            {"type": "text", "text": "Doing both."},
        ],
        "tool_calls": [_call("call_1", "terminal", {"command": "ls"}), _call("call_2", "read_file", {"path": "a"})],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "a\nb"},
    {"role": "tool", "tool_call_id": "call_2", "content": "contents of a"},
    {"role": "user", "content": "Thanks, summarise."},
]


class TestAnthropicOutbound:
    """System is extracted, tool results merge into one user turn, roles alternate."""

    def test_system_extracted(self):
        system, turns = to_anthropic_messages(messages_from_dicts(HISTORY))
        assert system == [{"type": "text", "text": "You are helpful."}]
        assert all(t["role"] in ("user", "assistant") for t in turns)

    def test_alternation_and_merged_tool_results(self):
        _, turns = to_anthropic_messages(messages_from_dicts(HISTORY))
        assert [t["role"] for t in turns] == ["user", "assistant", "user"]
        last = turns[2]["content"]
        assert [b["type"] for b in last] == ["tool_result", "tool_result", "text"]
        assert [b.get("tool_use_id") for b in last[:2]] == ["call_1", "call_2"]
        assert last[0]["content"] == "a\nb"
        assert last[2]["text"] == "Thanks, summarise."

    def test_assistant_blocks_thinking_first_then_text_then_tool_use(self):
        _, turns = to_anthropic_messages(messages_from_dicts(HISTORY))
        blocks = turns[1]["content"]
        assert [b["type"] for b in blocks] == ["thinking", "text", "tool_use", "tool_use"]
        assert blocks[0] == {"type": "thinking", "thinking": "plan", "signature": "SIG1"}
        assert blocks[2] == {"type": "tool_use", "id": "call_1", "name": "terminal", "input": {"command": "ls"}}

    def test_unparseable_arguments_become_empty_input(self):
        msgs = [{"role": "user", "content": "x"}, {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "t", "arguments": "{not json"}}]}]
        _, turns = to_anthropic_messages(messages_from_dicts(msgs))
        assert turns[1]["content"] == [{"type": "tool_use", "id": "c", "name": "t", "input": {}}]

    def test_images_and_empty_text(self):
        msgs = [{"role": "user", "content": [
            {"type": "text", "text": ""},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
            {"type": "image_url", "image_url": {"url": "https://x/y.png"}},
        ]}]
        _, turns = to_anthropic_messages(messages_from_dicts(msgs))
        assert turns[0]["content"] == [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}},
            {"type": "image", "source": {"type": "url", "url": "https://x/y.png"}},
        ]

    def test_tools(self):
        assert to_anthropic_tools([TERMINAL_TOOL]) == [{
            "name": "terminal",
            "description": "Run a shell command",
            "input_schema": TERMINAL_TOOL["function"]["parameters"],
        }]


class TestCacheMarkers:
    """system_and_3: four breakpoints on content parts, never on the envelope."""

    def test_system_and_last_three(self):
        system, turns = to_anthropic_messages(messages_from_dicts(HISTORY + [{"role": "assistant", "content": "Summary."}]))
        system, marked = apply_system_and_3(system, turns, "5m")
        assert system[-1]["cache_control"] == {"type": "ephemeral"}
        assert len(marked) == 4
        assert not any("cache_control" in b for b in marked[0]["content"])
        for turn in marked[1:]:
            assert "cache_control" not in turn  # never the envelope
            assert turn["content"][-1]["cache_control"] == {"type": "ephemeral"}
            assert sum("cache_control" in b for b in turn["content"]) == 1
        count = sum("cache_control" in b for t in marked for b in t["content"]) + 1
        assert count == 4

    def test_one_hour_ttl(self):
        assert cache_marker("1h") == {"type": "ephemeral", "ttl": "1h"}
        _, marked = apply_system_and_3(None, [{"role": "user", "content": "hi"}], "1h")
        assert marked == [{"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral", "ttl": "1h"}}]}]

    def test_thinking_block_not_marked(self):
        turns = [{"role": "assistant", "content": [{"type": "text", "text": "a"}, {"type": "thinking", "thinking": "t", "signature": "s"}]}]
        _, marked = apply_system_and_3(None, turns)
        assert "cache_control" not in marked[0]["content"][1]
        assert marked[0]["content"][0]["cache_control"] == {"type": "ephemeral"}

    def test_input_not_mutated(self):
        system, turns = to_anthropic_messages(messages_from_dicts(HISTORY))
        before = json.dumps([system, turns])
        apply_system_and_3(system, turns)
        assert json.dumps([system, turns]) == before


class TestAnthropicKwargs:
    """max_tokens is always set within the output cap; thinking follows reasoning_effort."""

    @pytest.mark.parametrize(("asked", "cap", "sent"), [(None, 64000, 64000), (1000, 64000, 1000), (200000, 8192, 8192)])
    def test_max_tokens(self, asked, cap, sent):
        kwargs = build_anthropic_kwargs(request(max_tokens=asked), cap)
        assert kwargs["max_tokens"] == sent

    def test_thinking_budget_and_no_temperature(self):
        kwargs = build_anthropic_kwargs(request(reasoning_effort="high", temperature=0.3), 64000)
        assert kwargs["thinking"] == {"type": "enabled", "budget_tokens": 16384}
        assert "temperature" not in kwargs
        assert kwargs["extra_headers"]["anthropic-beta"] == "interleaved-thinking-2025-05-14"

    def test_temperature_without_thinking(self):
        assert build_anthropic_kwargs(request(temperature=0.3), 64000)["temperature"] == 0.3


class TestChatOutbound:
    """Chat Completions keeps the history, drops extras, uses developer for GPT-5/codex."""

    def test_extras_dropped(self):
        wire = to_chat_messages(messages_from_dicts(HISTORY), "gpt-4o")
        assert wire[2] == {"role": "assistant", "content": "Doing both.", "tool_calls": HISTORY[2]["tool_calls"]}
        assert wire[0]["role"] == "system"

    @pytest.mark.parametrize("model", ["gpt-5", "openai/gpt-5.1-mini", "gpt-5-codex", "codex-mini"])
    def test_developer_role(self, model):
        assert to_chat_messages(messages_from_dicts(HISTORY), model)[0]["role"] == "developer"
        kwargs = build_chat_kwargs(request(HISTORY, model=model, max_tokens=100))
        assert kwargs["max_completion_tokens"] == 100
        assert "max_tokens" not in kwargs

    def test_usage_requested(self):
        assert build_chat_kwargs(request())["stream_options"] == {"include_usage": True}

    def test_tools_encoded_once_give_the_same_body(self):
        tools = [TERMINAL_TOOL, {"type": "function", "function": {"name": "é\u2028", "parameters": {"type": "object"}}}]
        plain = attrs.evolve(request(HISTORY), tools=tools)
        spliced = attrs.evolve(plain, tools_json=encode_raw(tools, "tools"))
        body = encode_body(build_chat_kwargs(spliced))
        assert body == encode_body(build_chat_kwargs(plain))
        assert json.loads(body)["tools"] == tools
        # The encoding given is what goes out: the list is not encoded again.
        marked = encode_body(build_chat_kwargs(attrs.evolve(plain, tools_json=RawJson('["given"]'))))
        assert json.loads(marked)["tools"] == ["given"]

    def test_gemini_extra_content_kept(self):
        call = {**_call("c", "t", {}), "extra_content": {"google": {"thought_signature": "abc"}}}
        wire = to_chat_messages(messages_from_dicts([{"role": "assistant", "content": None, "tool_calls": [call]}]), "gemini-3-pro")
        assert wire[0]["tool_calls"][0]["extra_content"] == {"google": {"thought_signature": "abc"}}


class TestChatInbound:
    """Chat chunks without tool-call indexes are still assembled per call."""

    def test_missing_index(self):
        def chunk(tool_calls):
            # The chunk as the server sent it: the adapter reads plain JSON.
            return {
                "id": "x", "object": "chat.completion.chunk", "created": 0, "model": "m",
                "choices": [{"index": 0, "delta": {"tool_calls": tool_calls}, "finish_reason": None}],
            }  # fmt: skip

        acc = TurnAccumulator()
        for tcs in (
            [{"id": "a", "type": "function", "function": {"name": "t", "arguments": '{"x"'}}],
            [{"function": {"arguments": ": 1}"}}],
            [{"id": "b", "type": "function", "function": {"name": "u", "arguments": "{}"}}],
        ):
            convert_chat_chunk(chunk(tcs), acc)
        calls = message_to_dict(acc.message())["tool_calls"]
        assert [(c["id"], c["function"]["arguments"]) for c in calls] == [("a", '{"x": 1}'), ("b", "{}")]


class TestResponsesOutbound:
    """Responses: instructions, input items, function_call_output, reasoning replay."""

    def test_items(self):
        history = [dict(m) for m in HISTORY]
        history[2]["responses_items"] = [
            {"id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": "ENC"},
            {"id": "fc_1", "type": "function_call", "call_id": "call_1", "name": "terminal", "arguments": "{}"},
        ]
        instructions, items = to_responses_input(messages_from_dicts(history))
        assert instructions == "You are helpful."
        kinds = [i.get("type") or i["role"] for i in items]
        assert kinds == ["user", "reasoning", "assistant", "function_call", "function_call", "function_call_output", "function_call_output", "user"]
        assert items[1] == {"id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": "ENC"}
        assert items[3] == {"type": "function_call", "call_id": "call_1", "name": "terminal", "arguments": '{"command": "ls"}', "id": "fc_1"}
        assert "id" not in items[4]
        assert items[5] == {"type": "function_call_output", "call_id": "call_1", "output": "a\nb"}

    def test_kwargs(self):
        kwargs = build_responses_kwargs(request(HISTORY, tools=[TERMINAL_TOOL], reasoning_effort="medium", max_tokens=500))
        assert kwargs["store"] is False
        assert kwargs["reasoning"] == {"effort": "medium", "summary": "auto"}
        assert kwargs["include"] == ["reasoning.encrypted_content"]
        assert kwargs["max_output_tokens"] == 500
        assert to_responses_tools([TERMINAL_TOOL])[0]["name"] == "terminal"


class TestRoundTrip:
    """Provider extras received in one turn are sent back on the next request."""

    async def test_anthropic_signature_round_trips(self, server, pool):
        server.push(
            {"reasoning": "I should list.", "signature": "U0lHTkFUVVJF", "tool_calls": [{"id": "toolu_1", "name": "terminal", "arguments": {"command": "ls"}}]},
            {"text": "Done."},
        )
        adapter = adapter_for(server, pool, "anthropic_messages")
        history = [{"role": "user", "content": "list"}]
        first = message_to_dict((await collect(adapter, request(history, tools=[TERMINAL_TOOL])))[-1].message)
        assert first["anthropic_content"] == [
            {"type": "thinking", "thinking": "I should list.", "signature": "U0lHTkFUVVJF"},
            {"type": "tool_use", "id": "toolu_1", "name": "terminal", "input": {"command": "ls"}},
        ]
        history += [first, {"role": "tool", "tool_call_id": "toolu_1", "content": "a b"}]
        await collect(adapter, request(history, tools=[TERMINAL_TOOL]))
        sent = server.requests[1].body["messages"]
        assert sent[1]["role"] == "assistant"
        assert sent[1]["content"][0] == {"type": "thinking", "thinking": "I should list.", "signature": "U0lHTkFUVVJF"}
        assert sent[1]["content"][1]["type"] == "tool_use" and sent[1]["content"][1]["id"] == "toolu_1"
        assert sent[2]["content"][0]["type"] == "tool_result" and sent[2]["content"][0]["tool_use_id"] == "toolu_1"

    async def test_responses_reasoning_and_call_ids_round_trip(self, server, pool):
        server.push(
            {"reasoning": "plan", "signature": "ENCRYPTED", "tool_calls": [{"id": "call_r", "name": "terminal", "arguments": {"command": "ls"}}]},
            {"text": "Done."},
        )
        adapter = adapter_for(server, pool, "codex_responses")
        history = [{"role": "user", "content": "list"}]
        first = message_to_dict((await collect(adapter, request(history, tools=[TERMINAL_TOOL])))[-1].message)
        history += [first, {"role": "tool", "tool_call_id": "call_r", "content": "a b"}]
        await collect(adapter, request(history, tools=[TERMINAL_TOOL]))
        sent = server.requests[1].body["input"]
        reasoning = [i for i in sent if i.get("type") == "reasoning"]
        assert reasoning and reasoning[0]["encrypted_content"] == "ENCRYPTED"
        call = next(i for i in sent if i.get("type") == "function_call")
        assert call["call_id"] == "call_r" and call["id"].startswith("fc_")
        output = next(i for i in sent if i.get("type") == "function_call_output")
        assert output == {"type": "function_call_output", "call_id": "call_r", "output": "a b"}

    async def test_openrouter_reasoning_details_round_trip(self, server, pool):
        server.push({"reasoning": "step by step", "signature": "OR-SIG", "text": "ok"}, {"text": "again"})
        adapter = adapter_for(server, pool, "chat_completions")
        history = [{"role": "user", "content": "go"}]
        first = message_to_dict((await collect(adapter, request(history)))[-1].message)
        assert first["reasoning"] == "step by step"
        assert first["reasoning_details"] == [
            {"type": "reasoning.text", "text": "step by step", "index": 0, "format": "anthropic-claude-v1", "signature": "OR-SIG"}
        ]
        history += [first, {"role": "user", "content": "more"}]
        await collect(adapter, request(history))
        sent = server.requests[1].body["messages"][1]
        assert sent["reasoning_details"] == first["reasoning_details"]
        assert "reasoning" not in sent

    async def test_stripped_history_sends_no_thinking(self, server, pool):
        # The recovery layer's level 3 strips reasoning; the adapter must then send none.
        server.push({"reasoning": "hm", "signature": "SIG", "text": "a"}, {"text": "b"})
        adapter = adapter_for(server, pool, "anthropic_messages")
        history = [{"role": "user", "content": "x"}]
        first = message_to_dict((await collect(adapter, request(history)))[-1].message)
        stripped, changed = strip_reasoning(messages_from_dicts(history + [first, {"role": "user", "content": "y"}]))
        assert changed
        await collect(adapter, request(stripped))
        sent = server.requests[1].body["messages"][1]["content"]
        assert [b["type"] for b in sent] == ["text"]

    async def test_gemini_extra_content_round_trips(self, server, pool):
        extra = {"google": {"thought_signature": "gem-sig"}}
        server.push({"tool_calls": [{"id": "call_g", "name": "terminal", "arguments": {}, "extra_content": extra}]}, {"text": "ok"})
        adapter = adapter_for(server, pool, "chat_completions")
        history = [{"role": "user", "content": "go"}]
        first = message_to_dict((await collect(adapter, request(history, model="gemini-3-pro")))[-1].message)
        assert first["tool_calls"][0]["extra_content"] == extra
        history += [first, {"role": "tool", "tool_call_id": "call_g", "content": "x"}]
        await collect(adapter, request(history, model="gemini-3-pro"))
        assert server.requests[1].body["messages"][1]["tool_calls"][0]["extra_content"] == extra

    async def test_cache_markers_on_the_wire(self, server, pool):
        server.push({"text": "ok"})
        adapter = adapter_for(server, pool, "anthropic_messages")
        await collect(adapter, request(HISTORY, cache_ttl="1h"))
        body = server.requests[0].body
        marker = {"type": "ephemeral", "ttl": "1h"}
        assert body["system"][-1]["cache_control"] == marker
        marked = [b for t in body["messages"] for b in t["content"] if "cache_control" in b]
        assert len(marked) == 3 and all(b["cache_control"] == marker for b in marked)
        assert all("cache_control" not in t for t in body["messages"])
