"""Redaction of a text shown line by line: the secrets that span lines, judged with the lines around them.

:func:`tools.redact.redact_secrets` works on a whole text. A tool that shows a file a few lines at a
time (a search's hits and their context) cannot redact those lines alone: the lines of a private
key's body are plain base64, and only the ``BEGIN`` and ``END`` lines around them say they are a
secret. Redacted one by one, a body line came back whole.

:class:`RedactedLines` reads the lines of a text in order and judges them in blocks, each with
:data:`~tools._secret_rules.SECRET_REACH` characters of the lines before and after it: any secret
spanning lines that a block's line belongs to lies wholly in that span, so the line is judged as the
whole text would judge it, however far from the hit its key's ``BEGIN`` line is. Memory stays
bounded by the block size whatever the length of the text. A reader of a window far into a text
(``read_file``) starts at the window's first line: the lines before it are only counted. A secret
within one line is left to redacting each shown line alone (:func:`~tools.redact.redact_secrets`),
which the caller does anyway and which costs far less than searching every line of a file for every
kind of secret.
"""

from __future__ import annotations

import bisect
import itertools
import operator
from collections.abc import Generator, Iterable, Iterator
from typing import Final

from tools._secret_rules import SECRET_REACH, Span, may_span_lines, secret_spans
from tools.redact import replace_spans

__all__ = ["BLOCK_CHARS", "RedactedLine", "RedactedLines"]

#: Lines are judged in blocks of about this many characters (one block for most files).
BLOCK_CHARS: Final = 1024 * 1024
#: Lines are read from the source this many at a time.
_CHUNK_LINES: Final = 4096

RedactedLine = tuple[int, str, str]
"""``(number, text as read, text as shown)`` of one line: a plain tuple, as a search makes one per line
of every file it shows lines of (an object per line doubled the time of a search)."""


class RedactedLines:
    """The lines of one text, in order, each with the parts of secrets spanning lines in it replaced by
    ``[REDACTED]`` (a line's own secrets are for :func:`~tools.redact.redact_secrets` on the line shown).

    Args:
        lines: the text's lines, without their line breaks (a line's ``\\r`` may stay), read lazily.
        block_chars: the size of a block judged at once (a test makes it small).
        first: the number of the first line to yield: the lines before it are read and counted, and only
            the last :data:`~tools._secret_rules.SECRET_REACH` characters of them are judged (a window
            far into a long text costs about what counting its lines does).
    """

    def __init__(self, lines: Iterable[str], block_chars: int = BLOCK_CHARS, first: int = 1) -> None:
        self._source = lines
        self._lines = iter(lines)
        self._block_chars = block_chars
        self._first = max(1, first)
        # Invariant: the lines taken from the source so far, judged or not.
        self._taken = 0
        self._judged = self._judge_blocks()
        self._last = self._first - 1

    def __iter__(self) -> Iterator[RedactedLine]:
        return self._judged

    def line(self, number: int) -> RedactedLine | None:
        """The line numbered ``number``, reading on to it (None past the end).

        Raises:
            ValueError: ``number`` is not after the line asked for last (the lines are read once).
        """
        if number <= self._last:
            raise ValueError(f"line {number} was asked for after line {self._last}")
        skipped, self._last = number - self._last - 1, number
        return next(itertools.islice(self._judged, skipped, None), None)

    def line_count(self) -> int:
        """The number of lines of the text: the lines not read yet are read and counted, not judged, and
        none is yielded after this."""
        self._judged.close()
        return self._taken + sum(1 for _ in self._lines)

    def close(self) -> None:
        """Stop reading: close the source of the lines if it can be closed (a generator reading a file)."""
        self._judged.close()
        close = getattr(self._source, "close", None)
        if close is not None:
            close()

    def _judge_blocks(self) -> Generator[RedactedLine, None, None]:
        # Invariant: buffer[i] is line number ``first + i``; the lines before ``start`` (judged, or skipped before
        # the first line yielded) are kept only as the next block's margin, at least SECRET_REACH characters of
        # the text (all there are).
        skipped, buffer = self._skip(self._first - 1)
        first, start = skipped - len(buffer) + 1, len(buffer)
        while self._read(buffer, start, self._block_chars):
            # At least one line, and SECRET_REACH characters after it (or the end of the text).
            sizes = list(itertools.accumulate(_sizes(buffer[start:])))
            end = min(len(buffer), start + bisect.bisect_left(sizes, self._block_chars) + 1)
            self._read(buffer, end, SECRET_REACH)
            block = buffer[start:end]
            yield from zip(range(first + start, first + end), block, _judge(buffer[:start], block, buffer[end:]))
            keep_from = _margin_from(buffer, end)
            del buffer[:keep_from]
            first, start = first + keep_from, end - keep_from

    def _skip(self, count: int) -> tuple[int, list[str]]:
        """Read ``count`` lines (fewer where the text ends): how many were read, and the last of them that the
        next line is judged with (at least SECRET_REACH characters, or all there are)."""
        skipped = 0
        margin: list[str] = []
        while skipped < count and (chunk := self._take(min(count - skipped, _CHUNK_LINES))):
            skipped += len(chunk)
            margin.extend(chunk)
            del margin[: _margin_from(margin, len(margin))]
        return skipped, margin

    def _read(self, buffer: list[str], index: int, chars: int) -> bool:
        """Read lines onto ``buffer`` until it holds ``chars`` characters from ``index`` on, or the text ends;
        whether it holds any line from ``index`` on."""
        held = sum(_sizes(buffer[index:]))
        while held < chars and (chunk := self._take(_CHUNK_LINES)):
            buffer.extend(chunk)
            held += sum(_sizes(chunk))
        return index < len(buffer)

    def _take(self, count: int) -> list[str]:
        """The next ``count`` lines of the source (fewer where it ends)."""
        chunk = list(itertools.islice(self._lines, count))
        self._taken += len(chunk)
        return chunk


def _sizes(lines: Iterable[str]) -> Iterator[int]:
    """The characters of each line with its line break (counted without a Python call per line)."""
    return map(operator.add, map(len, lines), itertools.repeat(1))


def _margin_from(lines: list[str], end: int) -> int:
    """The index from which ``lines[:end]`` holds the last SECRET_REACH characters before line ``end`` (all
    there are): the margin a line after them is judged with."""
    back = list(itertools.accumulate(_sizes(reversed(lines[:end]))))
    return max(0, end - bisect.bisect_left(back, SECRET_REACH) - 1)


def _judge(before: list[str], block: list[str], after: list[str]) -> list[str]:
    """The lines of ``block`` as shown: the secrets found in ``before + block + after`` replaced.

    A region without a secret that spans lines is left as it is: each line shown is redacted alone too
    (a search's :func:`~tools.search._collect.cap_line`), which finds the others at a fraction of the cost.
    """
    region = "\n".join([*before, *block, *after])
    spans = secret_spans(region) if may_span_lines(region) else []
    if not spans:
        return block
    starts = list(itertools.accumulate(_sizes(block[:-1]), initial=sum(_sizes(before))))
    per_line: dict[int, list[Span]] = {}
    for start, end in spans:
        # Each line the span touches loses the part of it the span covers (its line break aside).
        first = max(0, bisect.bisect_right(starts, start) - 1)
        for index in range(first, len(block)):
            line_start = starts[index]
            if line_start >= end:
                break
            piece = (max(start, line_start) - line_start, min(end, line_start + len(block[index])) - line_start)
            if piece[0] < piece[1]:
                per_line.setdefault(index, []).append(piece)
    return [replace_spans(line, per_line.get(index, [])) for index, line in enumerate(block)]

