"""The model's Markdown as Signal messages: plain text and its text styles, split at 8,000 characters.

Signal renders no Markdown. A message carries its styles beside the text, each ``START:LENGTH:STYLE``
counted in UTF-16 code units (signal-cli's ``textStyle`` parameter): BOLD, ITALIC, STRIKETHROUGH,
MONOSPACE and SPOILER. So the markers are taken out and their spans become styles: code (spans and
blocks) is monospace, headings bold, bullets ``•``, a link its label and address. Every piece is
converted on its own, so each renders alone; a marker the model left open stays literal text.
"""

from __future__ import annotations

import attrs

from markup.inline import BULLET, EMPHASIS_GROUPS, HEADING, INLINE, RULE
from markup.split import markdown_blocks, split_markdown, utf16_length

__all__ = ["SIGNAL_LIMIT", "StyledText", "signal_chunks", "to_signal"]

#: The longest message sent in one piece, in characters (Hermes's limit for Signal).
SIGNAL_LIMIT = 8_000

_STYLES = {"bold": "BOLD", "italic": "ITALIC", "strike": "STRIKETHROUGH", "spoiler": "SPOILER"}


@attrs.frozen
class StyledText:
    """A message's plain text and its styles (``START:LENGTH:STYLE``, UTF-16 positions)."""

    text: str
    styles: tuple[str, ...] = ()


class _Writer:
    """Plain text written piece by piece, with the styled spans noted as they are written."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.at = 0  # UTF-16 position of the end
        self.styles: list[str] = []

    def write(self, text: str) -> None:
        """Append plain text."""
        self.parts.append(text)
        self.at += utf16_length(text)

    def mark(self, style: str, start: int) -> None:
        """Note what was written since ``start`` as one span of ``style``."""
        if self.at > start:
            self.styles.append(f"{start}:{self.at - start}:{style}")


def _inline(text: str, out: _Writer) -> None:
    position = 0
    for match in INLINE.finditer(text):
        out.write(text[position:match.start()])
        position = match.end()
        if match["code"]:
            start = out.at
            out.write(match["code_text"].strip())
            out.mark("MONOSPACE", start)
        elif match["link_text"] is not None:
            _inline(match["link_text"], out)
            out.write(f" ({match['url']})")
        else:
            group, kind = next((group, kind) for group, kind in EMPHASIS_GROUPS if match[group] is not None)
            start = out.at
            _inline(match[group], out)
            out.mark(_STYLES[kind], start)
    out.write(text[position:])


def _lines(text: str, out: _Writer) -> None:
    for n, line in enumerate(text.split("\n")):
        if n:
            out.write("\n")
        heading, bullet = HEADING.match(line), BULLET.match(line)
        if heading is not None:
            start = out.at
            _inline(heading["text"], out)
            out.mark("BOLD", start)
        elif bullet is not None and not RULE.fullmatch(line):
            out.write(f"{bullet['indent']}• ")
            _inline(bullet["text"], out)
        else:
            _inline(line, out)


def to_signal(markdown: str) -> StyledText:
    """``markdown`` as Signal's plain text and styles (not split)."""
    out = _Writer()
    for block in markdown_blocks(markdown):
        body = block.text.rstrip("\n") if block.fence else block.text.strip("\n")
        if not body:
            continue
        if out.parts:
            out.write("\n")
        if block.fence:
            start = out.at
            out.write(body)
            out.mark("MONOSPACE", start)
        else:
            _lines(body, out)
    return StyledText("".join(out.parts), tuple(out.styles))


def signal_chunks(markdown: str, limit: int = SIGNAL_LIMIT) -> list[StyledText]:
    """The reply as Signal messages, each within ``limit`` characters (taking the markers out only shortens
    a piece). Empty pieces are dropped."""
    return [styled for piece in split_markdown(markdown, limit) if (styled := to_signal(piece)).text.strip()]
