"""Find ``old_string`` in a file through Hermes Agent's chain of strategies and replace it.

The first strategy (see :mod:`tools.files._strategies`) that finds ``old_string`` decides; the
result names it. Where a loose strategy matched, the replacement is fitted to the file: its
indentation moved to the file's, ``\\t``/``\\r`` typed as two characters turned into the real
ones where the file has them, the file's typographic characters kept. A match never pairs the
redaction marker in ``old_string`` with anything but the marker's own text in the file, so no
strategy can match ``[REDACTED]`` against the secret it hides.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from difflib import SequenceMatcher
from typing import Final

import attrs

from tools.errors import ToolInputError
from tools.files._markers import MarkerOverSecret, hidden_secrets
from tools.files._strategies import (
    LOOSE_STRATEGIES,
    STRATEGIES,
    Mapped,
    Span,
    Strategy,
    ascii_equivalents,
    ascii_pieces,
    unescape_controls,
)
from tools.redact import REDACTED, redact_secrets

__all__ = ["AmbiguousMatch", "FuzzyEdit", "already_applied", "fuzzy_replace", "no_match_error"]

_MAX_LOCATIONS: Final = 5
_MAX_CANDIDATES: Final = 10
_SNIPPET: Final = 80
# A new_string shorter than this (stripped) found in the file may be there by chance, not by an earlier edit.
_MIN_APPLIED_CHARS: Final = 8
_BLOCK_OPENERS: Final = (":", "{", "(")


class AmbiguousMatch(ToolInputError):
    """``old_string`` matches several places and ``replace_all`` was not asked for (or cannot apply)."""


@attrs.frozen
class FuzzyEdit:
    """A replacement found and made in memory.

    Attributes:
        text: the file's new content.
        count: how many places were replaced.
        strategy: the name of the strategy that found them (Hermes's name: ``exact``, ``line_trimmed``, ...).
    """

    text: str
    count: int
    strategy: str


def _keeps_marker(content: str, span: Span, old: str) -> bool:
    """Whether the file region holds the marker text at least as often as ``old`` does (else a marker would pair with a secret)."""
    return content[span[0] : span[1]].count(REDACTED) >= old.count(REDACTED)


def fuzzy_replace(
    content: str,
    old: str,
    new: str,
    replace_all: bool,
    shown: str,
    strategies: Sequence[tuple[str, Strategy]] = STRATEGIES,
) -> FuzzyEdit:
    """Replace ``old`` by ``new`` in ``content`` (the file ``shown``), through the first strategy that finds it.

    ``strategies`` is the chain to try (Hermes's by default; a test may try one strategy alone).

    Raises:
        ToolInputError: ``old`` is empty or blank, not found (:func:`no_match_error`), or the
            replacement looks like a transport artefact (escaped quotes, a stray indent).
        AmbiguousMatch: several matches without ``replace_all``, or several loose ones with it.
    """
    if old == "":
        raise ToolInputError("old_string is empty. To create or overwrite a whole file use write_file.")
    if not old.strip():
        raise ToolInputError("old_string is only whitespace; give text that anchors the edit (a line of the file).")
    for name, strategy in strategies:
        spans = [span for span in strategy(content, old) if _keeps_marker(content, span, old)]
        if not spans:
            continue
        if len(spans) > 1 and not replace_all:
            raise AmbiguousMatch(
                f"old_string matches {len(spans)} places in {shown} ({name} match):\n{_locations(content, spans)}\n"
                "Include more surrounding lines to make it unique, or pass replace_all=true to change every occurrence."
            )
        if len(spans) > 1 and name in LOOSE_STRATEGIES:
            raise AmbiguousMatch(
                f"old_string only resembles {len(spans)} places in {shown} ({name} match); replace_all changes "
                "exact matches only. Copy the text exactly (whitespace included) from read_file."
            )
        if name != "exact":
            _refuse_drift(content, spans, old, new)
        return FuzzyEdit(_apply(content, spans, old, new, name), len(spans), name)
    raise no_match_error(content, old, shown)


def _apply(content: str, spans: list[Span], old: str, new: str, strategy: str) -> str:
    regions = "".join(content[start:end] for start, end in spans)
    # old_string matched once its escapes were read as characters: new_string was typed the same way.
    value = unescape_controls(new) if strategy == "escape_normalized" else new
    # A model often sends a tab or CR as the two characters \t, \r; they are real only where the file has them.
    if "\\t" in value and "\t" in regions:
        value = value.replace("\\t", "\t")
    if "\\r" in value and "\r" in regions:
        value = value.replace("\\r", "\r")
    # A CRLF file matched by a model's LF text gets CRLF back, not mixed line endings.
    if "\r\n" in regions and "\n" in value and "\r\n" not in value:
        value = value.replace("\n", "\r\n")
    pieces: list[str] = []
    last = 0
    for start, end in spans:
        region = content[start:end]
        fitted = value
        if strategy == "unicode_normalized":
            fitted = _keep_typography(region, old, fitted)
        if strategy != "exact":
            fitted = _reindent(region, old, fitted)
        pieces += [content[last:start], fitted]
        last = end
    pieces.append(content[last:])
    return "".join(pieces)


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def _first_text_line(text: str) -> str | None:
    return next((line for line in text.split("\n") if line.strip()), None)


def _reindent(region: str, old: str, new: str) -> str:
    """``new`` with its indentation moved from ``old``'s to the file region's, relative nesting kept.

    Hermes swaps ``old``'s base indentation for the region's. Where the region has as many lines
    as ``old`` (every line-based strategy), each line of ``new`` is moved by the line of ``old`` it
    stands for (aligned by a diff of the two), so a model that flattened a block's indentation
    writes it back at the file's depth.
    """
    old_first, file_first = _first_text_line(old), _first_text_line(region)
    if not new or old_first is None or file_first is None:
        return new
    bases = (_indent(old_first), _indent(file_first))
    old_lines, file_lines, new_lines = old.split("\n"), region.split("\n"), new.split("\n")
    if len(old_lines) != len(file_lines):
        return "\n".join(_moved(line, *bases) for line in new_lines)
    if all(_indent(a) == _indent(b) for a, b in zip(old_lines, file_lines)):
        return new
    out: list[str] = []
    matcher = SequenceMatcher(None, [line.strip() for line in old_lines], [line.strip() for line in new_lines], autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        for offset, line in enumerate(new_lines[j1:j2]):
            if tag in ("equal", "replace") and i1 + offset < i2 and old_lines[i1 + offset].strip():
                bases = (_indent(old_lines[i1 + offset]), _indent(file_lines[i1 + offset]))
            out.append(_moved(line, *bases))
    return "\n".join(out)


def _moved(line: str, old_base: str, file_base: str) -> str:
    """``line`` with ``old_base`` at its start replaced by ``file_base`` (a shallower line starts at ``file_base``)."""
    if not line.strip():
        return line
    if line.startswith(old_base):
        return file_base + line[len(old_base) :]
    return file_base + line.lstrip(" \t")


def _keep_typography(region: str, old: str, new: str) -> str:
    """Apply the edit ``old`` -> ``new`` (ASCII) to the file's region, keeping its typographic characters where unchanged."""
    mapped = Mapped(region, ascii_pieces)
    plain_old = ascii_equivalents(old)
    if mapped.text != plain_old:
        return new
    out: list[str] = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, plain_old, new, autojunk=False).get_opcodes():
        if tag == "equal":
            out.append(region[mapped.starts[i1] : mapped.ends[i2 - 1]])
        elif tag in ("replace", "insert"):
            out.append(new[j1:j2])
    return "".join(out)


def _refuse_drift(content: str, spans: list[Span], old: str, new: str) -> None:
    """Refuse a loose match whose replacement carries a transport artefact the file does not have.

    Raises:
        ToolInputError: ``\\'`` or ``\\"`` in both strings but not in the file, or new lines indented
            deeper than any line of ``old`` with no block opened (a typo the looser match would write).
    """
    regions = "".join(content[start:end] for start, end in spans)
    for escaped in ("\\'", '\\"'):
        if escaped in old and escaped in new and escaped not in regions:
            raise ToolInputError(
                f"old_string and new_string contain {escaped!r} but the matched text of the file does not: the "
                f"backslash was probably added in transit. Send the {escaped[1]} without a backslash."
            )
    old_lines = [line for line in old.split("\n") if line.strip()]
    new_lines = [line for line in new.split("\n") if line.strip()]
    if not old_lines or not new_lines:
        return
    if any(line.rstrip().endswith(_BLOCK_OPENERS) for line in old_lines + new_lines):
        return
    deepest = max(len(_indent(line)) for line in old_lines)
    deeper = [line for line in new_lines if len(_indent(line)) > deepest]
    if deeper:
        raise ToolInputError(
            f"new_string has {len(deeper)} line(s) indented deeper than any line of old_string ({deepest} "
            f"characters) although neither opens a block; check the indentation of {deeper[0].strip()[:60]!r}."
        )


def _locations(content: str, spans: list[Span]) -> str:
    rows = []
    for start, _end in spans[:_MAX_LOCATIONS]:
        line_start = content.rfind("\n", 0, start) + 1
        line_end = content.find("\n", line_start)
        snippet = redact_secrets(content[line_start : len(content) if line_end == -1 else line_end].strip())
        if len(snippet) > _SNIPPET:
            snippet = snippet[: _SNIPPET - 3] + "..."
        rows.append(f"  line {content.count(chr(10), 0, start) + 1}: {snippet}")
    if len(spans) > _MAX_LOCATIONS:
        rows.append(f"  ... and {len(spans) - _MAX_LOCATIONS} more")
    return "\n".join(rows)


def already_applied(content: str, old: str, new: str) -> bool:
    """Whether the edit ``old`` -> ``new`` is already in ``content`` (a re-sent edit): ``new`` is there verbatim and ``old`` gone."""
    if len(new.strip()) < _MIN_APPLIED_CHARS or new not in content:
        return False
    return old == new or old not in content


def _candidates(text: str, old: str) -> list[int]:
    """Line numbers where ``old`` probably was meant: same first line ignoring whitespace, else similar lines."""
    anchor = next((line.strip() for line in old.splitlines() if line.strip()), "")
    if not anchor:
        return []
    lines = text.splitlines()
    exact = [n for n, line in enumerate(lines, start=1) if anchor in line]
    if exact:
        return exact[:_MAX_CANDIDATES]
    stripped = [line.strip() for line in lines]
    close = difflib.get_close_matches(anchor, stripped, n=_MAX_CANDIDATES, cutoff=0.6)
    return sorted({n for n, line in enumerate(stripped, start=1) if line in close})[:_MAX_CANDIDATES]


def no_match_error(text: str, old: str, shown: str) -> ToolInputError:
    """The error for an ``old_string`` no strategy finds in ``shown``, saying where it probably was."""
    if REDACTED in old and hidden_secrets(text):
        return MarkerOverSecret(
            f"old_string was not found in {shown}: it contains {REDACTED}, which stands for a secret you "
            "were not shown, so it never matches the file. Edit around the secret: choose an old_string "
            f"without the {REDACTED} part (the text before or after it), or ask the user to change the secret."
        )
    candidates = _candidates(text, old)
    where = (
        f" Similar text at line(s) {', '.join(map(str, candidates))}; read those lines with read_file "
        "and copy them exactly."
        if candidates
        else " Read the file with read_file and copy the text exactly."
    )
    return ToolInputError(f"old_string was not found in {shown} (no exact or fuzzy match).{where}")
