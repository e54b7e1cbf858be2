"""The streaming memory-context scrubber."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from conversation.fencing import CLOSE_TAG, OPEN_TAG, StreamingContextScrubber

_REFERENCE = re.compile(re.escape(OPEN_TAG) + r".*?(?:" + re.escape(CLOSE_TAG) + r"|\Z)", re.DOTALL)

# Text made of tag fragments and plain characters, so tags appear whole, split and partial.
_pieces = st.sampled_from([OPEN_TAG, CLOSE_TAG, "<", "</", "<memory", "-context>", "memory-context", ">", "a", "b\n", " "])
texts = st.lists(_pieces, max_size=30).map("".join)


def _chunk(text: str, cuts: list[int]) -> list[str]:
    points = sorted({c % (len(text) + 1) for c in cuts})
    edges = [0, *points, len(text)]
    return [text[a:b] for a, b in zip(edges, edges[1:])]


def _scrubbed(chunks: list[str]) -> str:
    scrubber = StreamingContextScrubber()
    return "".join(scrubber.feed(chunk) for chunk in chunks) + scrubber.flush()


class TestScrubber:
    """Any chunking of a stream scrubs to the same text as scrubbing it whole."""

    @given(texts, st.lists(st.integers(min_value=0, max_value=1000), max_size=20))
    def test_chunking_invariant(self, text: str, cuts: list[int]) -> None:
        assert _scrubbed(_chunk(text, cuts)) == _scrubbed([text])

    @given(texts)
    def test_whole_matches_reference_regex(self, text: str) -> None:
        assert _scrubbed([text]) == _REFERENCE.sub("", text)

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
