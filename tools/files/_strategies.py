"""The ways ``patch`` looks for ``old_string`` in a file, from exact to loosest.

Hermes Agent's chain (``tools/fuzzy_match.py``), in its order and with its names: each strategy
returns the spans of the file it takes for ``old_string`` (non-overlapping, in file order), and
the caller stops at the first that returns any. Line-based strategies compare whole lines, so
their spans run from the start of the first matched line to the end of the last (its newline
excluded). Normalising strategies search a normalised copy and map each hit back to the
original characters.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from difflib import SequenceMatcher
from typing import Final

__all__ = ["LOOSE_STRATEGIES", "STRATEGIES", "Span", "Strategy", "ascii_equivalents", "ascii_pieces", "Mapped", "unescape_controls"]

Span = tuple[int, int]
Strategy = Callable[[str, str], list[Span]]

# Typographic characters a model types as ASCII: quotes, dashes, ellipsis, and the space family.
_UNICODE_ASCII: Final[dict[str, str]] = {
    "\u201c": '"', "\u201d": '"', "\u2018": "'", "\u2019": "'",
    "\u2014": "--", "\u2013": "-", "\u2212": "-", "\u2026": "...",
    "\u00a0": " ", "\u202f": " ", "\u205f": " ", "\u3000": " ",
    **{chr(code): " " for code in range(0x2000, 0x200B)},
}  # fmt: skip

_ASCII_TABLE: Final = str.maketrans(_UNICODE_ASCII)
_BLANKS: Final = re.compile(r"[ \t]+")

# Block-anchor's bar for the lines between the anchors: laxer with one candidate than with several.
_ANCHOR_SIMILARITY_ALONE: Final = 0.50
_ANCHOR_SIMILARITY_AMONG_MANY: Final = 0.70
# Context-aware's bar for the anchors and for every other non-blank line.
_LINE_SIMILARITY: Final = 0.80


def ascii_equivalents(text: str) -> str:
    """``text`` with each typographic character spelt in ASCII."""
    return text.translate(_ASCII_TABLE)


def _exact(content: str, pattern: str) -> list[Span]:
    spans: list[Span] = []
    start = content.find(pattern)
    while start != -1 and pattern:
        spans.append((start, start + len(pattern)))
        start = content.find(pattern, start + len(pattern))
    return spans


def _line_starts(lines: Sequence[str]) -> list[int]:
    """The offset where each line starts, plus one past the end (lines joined by one newline)."""
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    return starts


def _line_span(lines: Sequence[str], starts: list[int], first: int, stop: int, length: int) -> Span:
    """The span of lines ``first`` to ``stop`` (excluded): no final newline, nor the CR of a CRLF ending."""
    end = min(starts[stop] - 1, length)
    return starts[first], end - 1 if lines[stop - 1].endswith("\r") else end


def _window_matches(content: str, pattern: str, same: Callable[[list[str], list[str]], bool]) -> list[Span]:
    """Spans of the runs of whole lines that ``same`` accepts as the pattern's lines, not overlapping."""
    lines, wanted = content.split("\n"), pattern.split("\n")
    starts, size = _line_starts(lines), len(wanted)
    spans: list[Span] = []
    index = 0
    while index + size <= len(lines):
        if same(lines[index : index + size], wanted):
            spans.append(_line_span(lines, starts, index, index + size, len(content)))
            index += size
        else:
            index += 1
    return spans


def _line_trimmed(content: str, pattern: str) -> list[Span]:
    return _window_matches(content, pattern, lambda block, want: [x.strip() for x in block] == [x.strip() for x in want])


def _indentation_flexible(content: str, pattern: str) -> list[Span]:
    return _window_matches(content, pattern, lambda block, want: [x.lstrip() for x in block] == [x.lstrip() for x in want])


def _trimmed_boundary(content: str, pattern: str) -> list[Span]:
    def same(block: list[str], want: list[str]) -> bool:
        if block[0].strip() != want[0].strip() or block[-1].strip() != want[-1].strip():
            return False
        return block[1:-1] == want[1:-1]

    return _window_matches(content, pattern, same)


class Mapped:
    """A normalised copy of a text, with where each of its characters came from."""

    def __init__(self, text: str, pieces: Callable[[str], list[tuple[str, int, int]]]) -> None:
        chars: list[str] = []
        self.starts: list[int] = []
        self.ends: list[int] = []
        for piece, start, end in pieces(text):
            for char in piece:
                chars.append(char)
                self.starts.append(start)
                self.ends.append(end)
        self.text = "".join(chars)

    def original(self, spans: list[Span]) -> list[Span]:
        """The spans of the original text that the spans of the normalised copy cover."""
        return [(self.starts[start], self.ends[end - 1]) for start, end in spans if end > start]


def _blank_runs(text: str) -> list[tuple[str, int, int]]:
    """Each character, except that a run of spaces and tabs becomes one space standing for the run."""
    return [
        (" " if match.group()[0] in " \t" else match.group(), match.start(), match.end())
        for match in re.finditer(r"[ \t]+|[^ \t]", text, re.DOTALL)
    ]


def ascii_pieces(text: str) -> list[tuple[str, int, int]]:
    """Each character of ``text`` as (its ASCII spelling, its start, its end)."""
    return [(_UNICODE_ASCII.get(char, char), index, index + 1) for index, char in enumerate(text)]


def _whitespace_normalized(content: str, pattern: str) -> list[Span]:
    # The character map is costly on a big file: built only once a quick search found a hit.
    if _BLANKS.sub(" ", pattern) not in _BLANKS.sub(" ", content):
        return []
    mapped = Mapped(content, _blank_runs)
    wanted = Mapped(pattern, _blank_runs).text
    return mapped.original(_exact(mapped.text, wanted))


def unescape_controls(text: str) -> str:
    """``text`` with the two-character escapes ``\\n``, ``\\t``, ``\\r`` turned into the characters."""
    return text.replace("\\n", "\n").replace("\\t", "\t").replace("\\r", "\r")


def _escape_normalized(content: str, pattern: str) -> list[Span]:
    unescaped = unescape_controls(pattern)
    return [] if unescaped == pattern else _exact(content, unescaped)


def _unicode_normalized(content: str, pattern: str) -> list[Span]:
    plain, wanted = ascii_equivalents(content), ascii_equivalents(pattern)
    if plain == content and wanted == pattern:
        return []
    spans = _exact(plain, wanted) or _line_trimmed(plain, wanted)
    return Mapped(content, ascii_pieces).original(spans) if spans else []


def _similarity(a: str, b: str) -> float:
    return 1.0 if a == b else SequenceMatcher(None, a, b).ratio()


def _similar(a: str, b: str, bar: float) -> bool:
    """Whether ``a`` and ``b`` are at least ``bar`` similar; the cheap upper bounds first (a file has many lines)."""
    if a == b:
        return True
    matcher = SequenceMatcher(None, a, b)
    return matcher.real_quick_ratio() >= bar and matcher.quick_ratio() >= bar and matcher.ratio() >= bar


def _block_anchor(content: str, pattern: str) -> list[Span]:
    wanted = ascii_equivalents(pattern).split("\n")
    if len(wanted) < 2:
        return []
    # Lines are compared normalised but spans measured on the original lines (expansions shift offsets).
    original_lines = content.split("\n")
    compared = [ascii_equivalents(line) for line in original_lines]
    size, first, last = len(wanted), wanted[0].strip(), wanted[-1].strip()
    candidates = [
        index
        for index in range(len(compared) - size + 1)
        if compared[index].strip() == first and compared[index + size - 1].strip() == last
    ]
    bar = _ANCHOR_SIMILARITY_ALONE if len(candidates) == 1 else _ANCHOR_SIMILARITY_AMONG_MANY
    starts = _line_starts(original_lines)
    spans: list[Span] = []
    for index in candidates:
        if spans and starts[index] <= spans[-1][1]:
            continue
        middle = "\n".join(compared[index + 1 : index + size - 1])
        if size <= 2 or _similarity(middle, "\n".join(wanted[1:-1])) >= bar:
            spans.append(_line_span(original_lines, starts, index, index + size, len(content)))
    return spans


def _context_aware(content: str, pattern: str) -> list[Span]:
    def same(block: list[str], want: list[str]) -> bool:
        if not _similar(want[0].strip(), block[0].strip(), _LINE_SIMILARITY):
            return False
        if not _similar(want[-1].strip(), block[-1].strip(), _LINE_SIMILARITY):
            return False
        return all(_similar(wanted.strip(), line.strip(), _LINE_SIMILARITY) for wanted, line in zip(want, block) if wanted.strip())

    return _window_matches(content, pattern, same)


STRATEGIES: Final[tuple[tuple[str, Strategy], ...]] = (
    ("exact", _exact),
    ("line_trimmed", _line_trimmed),
    ("whitespace_normalized", _whitespace_normalized),
    ("indentation_flexible", _indentation_flexible),
    ("escape_normalized", _escape_normalized),
    ("trimmed_boundary", _trimmed_boundary),
    ("unicode_normalized", _unicode_normalized),
    ("block_anchor", _block_anchor),
    ("context_aware", _context_aware),
)
"""Hermes's chain, in its order: (name, strategy)."""

LOOSE_STRATEGIES: Final = frozenset({"block_anchor", "context_aware"})
"""Strategies that accept a region only similar to ``old_string``: never applied to several matches at once."""
