"""Properties of the outbound conversions over generated histories."""

from __future__ import annotations

from hypothesis import given, settings

from messages.chat import messages_from_dicts
from providers.anthropic_convert import to_anthropic_messages
from providers.caching import apply_system_and_3
from providers.responses_convert import to_responses_input

from .strategies import histories


class TestAnthropicShape:
    """Any well-formed history becomes alternating turns with every tool_use answered next turn."""

    @settings(max_examples=60, deadline=None)
    @given(histories())
    def test_alternation_and_pairing(self, history):
        _, turns = to_anthropic_messages(messages_from_dicts(history))
        roles = [t["role"] for t in turns]
        assert roles[0] == "user"
        assert all(a != b for a, b in zip(roles, roles[1:]))
        for i, turn in enumerate(turns):
            uses = [b["id"] for b in turn["content"] if b["type"] == "tool_use"]
            if uses:
                answered = [b["tool_use_id"] for b in turns[i + 1]["content"] if b["type"] == "tool_result"]
                assert answered == uses
        assert sum(b["type"] == "tool_result" for t in turns for b in t["content"]) == sum(m["role"] == "tool" for m in history)

    @settings(max_examples=50, deadline=None)
    @given(histories())
    def test_at_most_four_breakpoints(self, history):
        system, turns = to_anthropic_messages(messages_from_dicts(history))
        system, marked = apply_system_and_3(system, turns)
        count = sum("cache_control" in b for t in marked for b in t["content"]) + sum("cache_control" in b for b in system or [])
        assert count == min(3, len(marked)) + (1 if system else 0)


class TestResponsesShape:
    """Every function_call_output follows the function_call with its call_id."""

    @settings(max_examples=60, deadline=None)
    @given(histories())
    def test_outputs_follow_calls(self, history):
        _, items = to_responses_input(messages_from_dicts(history))
        seen: set[str] = set()
        for item in items:
            if item.get("type") == "function_call":
                seen.add(item["call_id"])
            elif item.get("type") == "function_call_output":
                assert item["call_id"] in seen
        assert sum(i.get("type") == "function_call_output" for i in items) == sum(m["role"] == "tool" for m in history)
