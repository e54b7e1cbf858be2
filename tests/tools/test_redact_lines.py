"""Lines shown one at a time with the secrets spanning lines redacted, whatever the size of the blocks judged."""

from __future__ import annotations

import random

import pytest

from tests.tools.secret_samples import make_sample
from tools.redact import REDACTED
from tools.redact_lines import RedactedLines

PEM = make_sample("pem", random.Random("redact-lines")).secret
KEY = make_sample("openai", random.Random("redact-lines")).secret
LINES = ["first", f"token in use: {KEY}", "before the key", f'key = "{PEM.splitlines()[0]}', *PEM.splitlines()[1:], "after", "last"]
PEM_LINES = range(4, 4 + len(PEM.splitlines()))
#: Text three times SECRET_REACH long before and after: blocks then see only part of it.
FILLER = [f"filler {n:05d} " + "-" * 50 for n in range(400)]


def shown(lines: list[str], block_chars: int) -> list[str]:
    return [shown for _, _, shown in RedactedLines(lines, block_chars)]


class TestRedactedLines:
    """Each line of a private key is the marker, however the lines are cut into blocks."""

    def test_whole_text(self) -> None:
        """In one block: the key's lines are the marker (the text before its BEGIN stays), a one-line key beside it too."""
        expected = [
            "first", f"token in use: {REDACTED}", "before the key", f'key = "{REDACTED}',
            *[REDACTED] * (len(PEM_LINES) - 1), "after", "last",
        ]
        assert expected == shown(LINES, 10**6)

    @pytest.mark.parametrize("block_chars", [64, 65, 1_000, 5_000, 9_000, 20_000, 30_000])
    def test_any_block_size(self, block_chars: int) -> None:
        """Blocks cut anywhere in a long text, through the key too: the same lines as judged whole."""
        text = [*FILLER, *LINES, *FILLER]
        assert [*FILLER, *shown(LINES, 10**6), *FILLER] == shown(text, block_chars)

    def test_numbers_and_text(self) -> None:
        """Each line keeps its number (from 1) and its text as read."""
        numbers, texts, _ = zip(*RedactedLines(LINES, 16))
        assert list(range(1, len(LINES) + 1)) == list(numbers)
        assert LINES == list(texts)


class TestLineByNumber:
    """line(N) reads on to line N; asking for an earlier line is an error, past the end is None."""

    def test_read_on(self) -> None:
        lines = RedactedLines(LINES, 16)
        assert (PEM_LINES[2], PEM.splitlines()[2], REDACTED) == lines.line(PEM_LINES[2])
        assert (PEM_LINES[-1] + 1, "after", "after") == lines.line(PEM_LINES[-1] + 1)
        with pytest.raises(ValueError, match="was asked for after"):
            lines.line(2)
        assert lines.line(len(LINES) + 1) is None


class TestFirstLine:
    """Starting at a later line yields the lines from it as judging the whole text does, and counts them all."""

    @pytest.mark.parametrize("block_chars", [1_000, 10**6])
    @pytest.mark.parametrize("first", [1, 2, len(FILLER) + 1, len(FILLER) + PEM_LINES[3], len(FILLER) + len(LINES)])
    def test_same_lines_as_the_whole_text(self, block_chars: int, first: int) -> None:
        """From the filler, the key's BEGIN line or the middle of its body: the same lines, numbers and texts."""
        text = [*FILLER, *LINES, *FILLER]
        assert list(RedactedLines(text, 10**6))[first - 1 :] == list(RedactedLines(text, block_chars, first))

    def test_line_count(self) -> None:
        """The lines of the text, however many were yielded before; none is yielded after."""
        text = [*FILLER, *LINES, *FILLER]
        lines = RedactedLines(iter(text), 64, first=len(FILLER) + PEM_LINES[2])
        assert (len(FILLER) + PEM_LINES[2], PEM.splitlines()[2], REDACTED) == next(iter(lines))
        assert len(text) == lines.line_count()
        assert [] == list(lines)

    def test_first_past_the_end(self) -> None:
        lines = RedactedLines(iter(LINES), first=len(LINES) + 5)
        assert ([], len(LINES)) == (list(lines), lines.line_count())
