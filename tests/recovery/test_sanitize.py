"""Level 1: histories are made UTF-8 clean before they are sent."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from providers.recovery import sanitize_messages, sanitize_text


class TestSanitizeText:
    """Lone surrogates become U+FFFD; split pairs are joined; clean text is untouched."""

    def test_clean_text_is_the_same_object(self) -> None:
        text = "héllo 😀"
        assert sanitize_text(text) is text

    def test_lone_surrogate_replaced(self) -> None:
        assert "a\ufffdb" == sanitize_text("a\ud800b")

    def test_split_pair_joined(self) -> None:
        assert "a😀b" == sanitize_text("a\ud83d\ude00b")

    def test_reversed_pair_is_two_lone_surrogates(self) -> None:
        assert "\ufffd\ufffd" == sanitize_text("\ude00\ud83d")

    @given(st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF)))
    def test_result_always_encodes(self, text: str) -> None:
        sanitize_text(text).encode("utf-8")


class TestSanitizeMessages:
    """Every string in a history, however nested, is cleaned; the flag says whether anything changed."""

    def test_nested_values_and_bytes(self) -> None:
        messages = [
            {"role": "user", "content": [{"type": "text", "text": "x\udcff"}]},
            {"role": "tool", "tool_call_id": "c1", "content": b"caf\xe9"},
        ]
        clean, changed = sanitize_messages(messages)
        assert changed
        assert clean[0]["content"][0]["text"] == "x\ufffd"
        assert clean[1]["content"] == "caf\ufffd"
        json.dumps(clean, ensure_ascii=False).encode("utf-8")
        assert messages[0]["content"][0]["text"] == "x\udcff"  # the input is not modified

    def test_clean_history_unchanged(self) -> None:
        messages = [{"role": "user", "content": "hi", "n": 1, "ok": None}]
        clean, changed = sanitize_messages(messages)
        assert (clean, changed) == (messages, False)
        assert clean is messages
