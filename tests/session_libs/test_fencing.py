"""Memory-context fencing and the streaming scrubber."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from actors.session.fencing import (
    CLOSE_TAG,
    OPEN_TAG,
    StreamingContextScrubber,
    fence_memory_context,
    inject_memory_context,
    scrub_memory_context,
)

_REFERENCE = re.compile(re.escape(OPEN_TAG) + r".*?(?:" + re.escape(CLOSE_TAG) + r"|\Z)", re.DOTALL)

# Text made of tag fragments and plain characters, so tags appear whole, split and partial.
_pieces = st.sampled_from([OPEN_TAG, CLOSE_TAG, "<", "</", "<memory", "-context>", "memory-context", ">", "a", "b\n", " "])
texts = st.lists(_pieces, max_size=30).map("".join)


def _chunk(text: str, cuts: list[int]) -> list[str]:
    points = sorted({c % (len(text) + 1) for c in cuts})
    edges = [0, *points, len(text)]
    return [text[a:b] for a, b in zip(edges, edges[1:])]


class TestScrubber:
    """Any chunking of a stream scrubs to the same text as scrubbing it whole."""

    @given(texts, st.lists(st.integers(min_value=0, max_value=1000), max_size=20))
    def test_chunking_invariant(self, text: str, cuts: list[int]) -> None:
        scrubber = StreamingContextScrubber()
        streamed = "".join(scrubber.feed(chunk) for chunk in _chunk(text, cuts)) + scrubber.flush()
        assert streamed == scrub_memory_context(text)

    @given(texts)
    def test_whole_matches_reference_regex(self, text: str) -> None:
        assert scrub_memory_context(text) == _REFERENCE.sub("", text)

    def test_split_tags_never_leak(self) -> None:
        scrubber = StreamingContextScrubber()
        shown = [scrubber.feed(d) for d in ["Hello <memo", "ry-context>secret", " stuff</memory-con", "text> world"]]
        assert shown == ["Hello ", "", "", " world"]
        assert scrubber.flush() == ""

    def test_held_partial_tag_released_on_flush(self) -> None:
        scrubber = StreamingContextScrubber()
        assert scrubber.feed("x <mem") == "x "
        assert scrubber.flush() == "<mem"

    def test_unclosed_block_hidden_to_end(self) -> None:
        scrubber = StreamingContextScrubber()
        assert scrubber.feed("a<memory-context>sec") == "a"
        assert scrubber.flush() == ""


class TestFence:
    """Recalled memory is fenced with the system note and placed before the user's text."""

    def test_fence_shape(self) -> None:
        fenced = fence_memory_context("User prefers tea")
        assert fenced.startswith(OPEN_TAG + "\n[System note:")
        assert "not new input from the user" in fenced
        assert fenced.endswith("\nUser prefers tea\n" + CLOSE_TAG)

    def test_nested_tags_removed_from_recalled_text(self) -> None:
        fenced = fence_memory_context(f"a {OPEN_TAG}x{CLOSE_TAG} b {CLOSE_TAG}{OPEN_TAG} c")
        assert fenced.count(OPEN_TAG) == 1 and fenced.count(CLOSE_TAG) == 1
        assert fenced.endswith("\na x b  c\n" + CLOSE_TAG)

    def test_inject_text_and_parts(self) -> None:
        original = {"role": "user", "content": "what next?"}
        injected = inject_memory_context(original, "fact")
        assert injected["content"].endswith("\n\nwhat next?") and injected["content"].startswith(OPEN_TAG)
        assert original["content"] == "what next?"
        parts = inject_memory_context({"role": "user", "content": [{"type": "text", "text": "q"}]}, "fact")
        assert parts["content"][0]["text"].startswith(OPEN_TAG) and parts["content"][1] == {"type": "text", "text": "q"}

    def test_empty_recall_changes_nothing(self) -> None:
        assert inject_memory_context({"role": "user", "content": "q"}, "  ") == {"role": "user", "content": "q"}

    def test_scrubbing_fenced_text_restores_original(self) -> None:
        injected = inject_memory_context({"role": "user", "content": "what next?"}, "fact")
        assert scrub_memory_context(injected["content"]) == "\n\nwhat next?"
