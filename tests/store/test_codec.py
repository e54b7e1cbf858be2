"""The message codec: every shape round-trips exactly; bad messages are refused."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings

from store.codec import RawJson, decode_message, dump_json, encode_message, encode_raw, message_text
from store.errors import InvalidRecordError

from .strategies import messages


def roundtrip(message: dict[str, Any]) -> dict[str, Any]:
    e = encode_message(message)
    return decode_message(
        e.role, e.content, e.content_json, e.tool_calls, e.tool_call_id, e.name, e.tool_name,
        e.finish_reason, e.reasoning, e.extras,
    )  # fmt: skip


class TestRoundTrip:
    """decode(encode(m)) == m for every JSON-serialisable message."""

    @given(messages)
    @settings(max_examples=300, deadline=None)
    def test_property(self, message: dict[str, Any]) -> None:
        assert roundtrip(message) == message

    def test_none_values_stay_present(self) -> None:
        message = {"role": "assistant", "content": None, "tool_calls": None, "reasoning": None}
        assert roundtrip(message) == message
        assert "tool_calls" not in roundtrip({"role": "user", "content": "hi"})

    def test_known_keys_use_columns_and_extras_hold_the_rest(self) -> None:
        e = encode_message(
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "hi"}],
                "reasoning": "thought",
                "reasoning_details": [{"type": "thinking", "signature": "sig=="}],
            }
        )
        assert (e.content_json, e.reasoning) == (True, "thought")
        assert e.extras == '{"reasoning_details":[{"type":"thinking","signature":"sig=="}]}'

    def test_counts_tool_calls(self) -> None:
        calls = [{"id": str(i), "type": "function", "function": {"name": "f", "arguments": "{}"}} for i in range(3)]
        assert encode_message({"role": "assistant", "tool_calls": calls}).tool_call_count == 3


class TestRefusal:
    """What cannot be stored faithfully is refused with InvalidRecordError."""

    @pytest.mark.parametrize(
        "message",
        [
            "not a dict",
            {"content": "no role"},
            {"role": ""},
            {"role": "user", "content": {1, 2}},
            {"role": "user", "x": math.nan},
            {"role": "user", 3: "non-string key"},
        ],
    )
    def test_bad_message(self, message: Any) -> None:
        with pytest.raises(InvalidRecordError):
            encode_message(message)


class TestMessageText:
    """The searchable text: content text parts, and tool call names with arguments."""

    def test_parts_and_calls(self) -> None:
        message = {
            "role": "assistant",
            "content": [{"type": "text", "text": "one"}, {"type": "image_url", "image_url": {}}, {"type": "text", "text": "two"}],
            "tool_calls": [{"function": {"name": "terminal", "arguments": {"cmd": "ls"}}}],
        }
        assert message_text(message) == ("one two", 'terminal {"cmd":"ls"}')


class TestRawJson:
    """A value encoded once (RawJson) is spliced into a state's text exactly as encoding it there would write it."""

    @given(messages)
    @settings(max_examples=200, deadline=None)
    def test_same_text_as_encoding_the_value(self, message: dict[str, Any]) -> None:
        plain = {"before": 1, "tools": [message, {"x": "é"}], "after": {"nested": [None, True, 2.5]}}
        spliced = {**plain, "tools": encode_raw(plain["tools"], "tools")}
        assert dump_json(spliced, "state") == dump_json(plain, "state")

    def test_lone_surrogates_repaired_in_the_rest(self) -> None:
        text = dump_json({"raw": encode_raw(["ok"], "raw"), "bad": "a\ud800b"}, "state")
        assert text == '{"raw":["ok"],"bad":"a\ufffdb"}'

    def test_refused_like_any_value(self) -> None:
        with pytest.raises(InvalidRecordError):
            encode_raw({"n": math.nan}, "tools")
        with pytest.raises(InvalidRecordError):
            dump_json({"raw": RawJson("[]"), "bad": object()}, "state")
        with pytest.raises(InvalidRecordError):
            dump_json({1: RawJson("[]")}, "state")
