"""messages.untrusted: surrogate repair and the safe JSON decoder every boundary uses."""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio
from hypothesis import given
from hypothesis import strategies as st

from messages.untrusted import (
    MAX_JSON_DEPTH,
    JsonLimitExceeded,
    JsonSyntaxError,
    UntrustedJsonError,
    loads,
    repair_json,
    repair_text,
)
from tests.strategies import (
    deeply_nested_json,
    json_values,
    hostile_frames,
    hostile_json_values,
    hostile_text,
    huge_integer_json,
    text_with_surrogate,
)


def _strings(value: Any) -> list[str]:
    """Every string in a JSON-like value, keys included."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in _strings(k) + _strings(v)]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return []


class TestRepairText:
    """repair_text makes any text encodable as UTF-8 and leaves clean text alone."""

    @given(st.text())
    def test_clean_text_is_returned_as_is(self, text: str) -> None:
        """Text without surrogates comes back as the very same object."""
        assert repair_text(text) is text

    @given(hostile_text)
    def test_any_text_becomes_encodable(self, text: str) -> None:
        """Whatever goes in, the result encodes as UTF-8 and repairing again changes nothing."""
        repaired = repair_text(text)
        repaired.encode("utf-8")
        assert repair_text(repaired) == repaired

    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ("a\udc80b", "a\ufffdb"),
            ("\ud800", "\ufffd"),
            ("\ud83d\ude00", "\U0001f600"),  # a pair split into two code points is joined
            ("\ude00\ud83d", "\ufffd\ufffd"),  # the wrong order is no pair
            ("\x00\u202e\ufeff", "\x00\u202e\ufeff"),  # encodable controls are not ours to change
        ],
    )
    def test_examples(self, text: str, expected: str) -> None:
        """Lone halves become U+FFFD; pairs join; other characters stay."""
        assert expected == repair_text(text)


class TestRepairJson:
    """repair_json repairs every string of a value, keys included, without touching the input."""

    @given(hostile_json_values())
    def test_every_string_is_encodable(self, value: Any) -> None:
        """After repair, the value's JSON encodes as UTF-8."""
        json.dumps(repair_json(value), ensure_ascii=False).encode("utf-8")

    def test_input_is_not_changed(self) -> None:
        """The value handed in keeps its surrogates; the copy is repaired."""
        value = {"k\udc80": ["\ud800", {"x": "ok"}]}
        assert {"k\ufffd": ["\ufffd", {"x": "ok"}]} == repair_json(value)
        assert {"k\udc80": ["\ud800", {"x": "ok"}]} == value

    def test_depth_bound(self) -> None:
        """With max_depth, a deeper value (even a list holding itself) is refused, not walked forever."""
        cycle: list[Any] = []
        cycle.append(cycle)
        with pytest.raises(JsonLimitExceeded, match="nested deeper than 5 levels"):
            repair_json(cycle, max_depth=5)
        assert [[[1]]] == repair_json([[[1]]], max_depth=3)


class TestLoadsLimits:
    """Deep nesting, long numbers and NaN are refused with a message, never RecursionError or ValueError."""

    def test_depth_at_the_limit_is_accepted(self) -> None:
        """Exactly MAX_JSON_DEPTH levels decode; one more is refused."""
        ok = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
        assert loads(ok) is not None
        with pytest.raises(JsonLimitExceeded, match=f"is nested deeper than {MAX_JSON_DEPTH} levels"):
            loads("[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1))

    def test_many_brackets_shallow_nesting(self) -> None:
        """Thousands of brackets side by side (a long chat body) are measured, not refused."""
        body = json.dumps({"messages": [{"content": [{"text": "[{"}]} for _ in range(2000)]})
        assert 2000 == len(loads(body)["messages"])

    @given(deeply_nested_json())
    def test_deep_nesting_is_refused(self, text: str) -> None:
        """Any nesting past the limit, closed or not, is one JsonLimitExceeded or a syntax error."""
        with pytest.raises((JsonLimitExceeded, JsonSyntaxError)):
            loads(text)

    async def test_deep_nesting_in_a_worker_thread(self) -> None:
        """A million brackets decoded in a Trio worker thread are refused there too."""
        with pytest.raises(JsonLimitExceeded):
            await trio.to_thread.run_sync(loads, b"[" * 1_000_000)

    @given(huge_integer_json)
    def test_huge_integer_is_refused(self, number: str) -> None:
        """A number past Python's conversion limit is named as such."""
        with pytest.raises(JsonLimitExceeded, match="holds a number of more than 4300 digits"):
            loads('{"n": ' + number + "}")

    @pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
    def test_non_json_constants(self, constant: str) -> None:
        """NaN and Infinity are not JSON (unless the caller maps them)."""
        with pytest.raises(JsonSyntaxError, match=f"{constant.lstrip('-')} is not a JSON value"):
            loads(f"[{constant}]")
        assert [None] == loads(f"[{constant}]", constant=lambda name: None)

    def test_invalid_utf8(self) -> None:
        """Bytes that are not UTF-8 name the offending byte."""
        with pytest.raises(UntrustedJsonError, match=r"is not valid UTF-8 \(byte 2\)"):
            loads(b'["\xff"]')

    def test_control_characters_only_when_not_strict(self) -> None:
        """A raw control character in a string is a syntax error unless strict=False (as models write)."""
        with pytest.raises(JsonSyntaxError, match="Invalid control character"):
            loads('["a\tb"]')
        assert ["a\tb"] == loads('["a\tb"]', strict=False)


class TestLoadsRepairs:
    """What loads returns never holds a lone surrogate."""

    def test_escaped_surrogates_in_keys_and_values(self) -> None:
        """JSON escapes of lone halves come back as U+FFFD; an escaped pair stays its character."""
        value = loads(rb'{"k\udc80": ["\ud800", "\ud83d\ude00", "\\udc80"]}')
        assert {"k\ufffd": ["\ufffd", "\U0001f600", "\\udc80"]} == value

    def test_raw_surrogate_in_a_str(self) -> None:
        """A str handed in that already holds a raw surrogate is repaired too."""
        assert ["a\ufffd"] == loads('["a\udc80"]')

    @given(text_with_surrogate())
    def test_encoded_hostile_text_decodes_to_its_repair(self, text: str) -> None:
        """ASCII-escaped JSON of any text decodes to that text repaired."""
        assert [repair_text(text)] == loads(json.dumps([text]))

    @given(hostile_frames(b'{"type":"Ping","id":1,"text":"x","args":{"a":[1,2]}}'))
    def test_never_raises_anything_else(self, frame: bytes) -> None:
        """Any hostile frame decodes to an encodable value or raises UntrustedJsonError."""
        try:
            value = loads(frame)
        except UntrustedJsonError:
            return
        for text in _strings(value):
            text.encode("utf-8")


# Texts around a JSON value: JSON's four whitespace characters, other Unicode spaces, trailing data.
_padding = st.text(alphabet=" \t\n\r", max_size=3) | st.text(alphabet=" \t\n\r\u00a0\u2028\x0bx[]{}\",:0", max_size=4)


class TestLoadsAgreesWithJson:
    """loads skips json.decode's regular expressions; it must decide and report exactly as json does."""

    @given(_padding, json_values, _padding)
    def test_same_value_or_same_error(self, before: str, value: Any, after: str) -> None:
        """Whatever surrounds a JSON text, loads returns json's value or fails with json's message and position."""
        text = before + json.dumps(value) + after
        try:
            expected: Any = ("value", json.loads(text))
        except json.JSONDecodeError as exc:
            expected = ("error", exc.msg, exc.pos)
        try:
            got: Any = ("value", loads(text))
        except JsonSyntaxError as exc:
            got = ("error", exc.msg, exc.pos)
        assert got == expected
