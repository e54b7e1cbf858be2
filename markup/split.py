"""Splitting a reply into messages a platform accepts, never inside a code block.

A reply is read as a sequence of fenced code blocks and the text between them. Pieces are filled
greedily; text is cut at a paragraph break if one fits, else at a line break, else at a space, and
only then anywhere. A code block too long for one message is cut at its line breaks and each part is
closed and reopened with the same fence and language, so every message renders on its own.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import attrs

__all__ = ["MarkdownBlock", "Measure", "converted_chunks", "markdown_blocks", "split_markdown", "utf16_length"]

#: How a platform counts a message's length.
Measure = Callable[[str], int]

_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>[^\n]*)$")
#: The shortest limit a split can honour: a reopened fence and a line of code must fit.
_MIN_LIMIT = 16


def utf16_length(text: str) -> int:
    """The length in UTF-16 code units (how Telegram counts a message)."""
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


@attrs.frozen
class MarkdownBlock:
    """A run of plain Markdown, or a fenced code block (``fence`` and ``info`` set, ``text`` its body)."""

    text: str
    fence: str = ""
    info: str = ""

    def render(self) -> str:
        """The block as Markdown again (a code block with its fences, on lines of their own)."""
        if not self.fence:
            return self.text
        return f"{self.fence}{self.info}\n{self.text}{self.fence}\n"


def markdown_blocks(markdown: str) -> Iterator[MarkdownBlock]:
    """The reply as text runs and fenced code blocks (an unclosed fence runs to the end, as it renders)."""
    lines = markdown.splitlines(keepends=True)
    text: list[str] = []
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index].rstrip("\n"))
        if opening is None:
            text.append(lines[index])
            index += 1
            continue
        if text:
            yield MarkdownBlock("".join(text))
            text = []
        fence = opening["fence"]
        body: list[str] = []
        index += 1
        while index < len(lines):
            line = lines[index].rstrip("\n").strip()
            if line.startswith(fence[0] * len(fence)) and not line.strip(fence[0]):
                index += 1
                break
            body.append(lines[index])
            index += 1
        code = "".join(body)
        if code and not code.endswith("\n"):
            code += "\n"
        yield MarkdownBlock(code, fence, opening["info"].strip())
    if text:
        yield MarkdownBlock("".join(text))


def _cut_text(text: str, limit: int, measure: Measure) -> tuple[str, str, bool]:
    """The longest head of ``text`` within ``limit``, cut at the best boundary; the rest; and whether
    the cut fell on a boundary (a hard cut goes through a word)."""
    if measure(text) <= limit:
        return text, "", True
    # The most characters that can fit (each counts at least one unit), then shrink to fit.
    end = min(len(text), limit)
    while end > 0 and measure(text[:end]) > limit:
        end -= max(1, (measure(text[:end]) - limit) // 2)
    window = text[:end]
    for separator in ("\n\n", "\n", " "):
        cut = window.rfind(separator)
        if cut > 0 and window[:cut].strip():
            return text[:cut].rstrip("\n "), text[cut + len(separator):], True
    return window, text[end:], False


def _cut_code(block: MarkdownBlock, limit: int, measure: Measure) -> tuple[MarkdownBlock, MarkdownBlock | None]:
    """The longest head of a code block that fits ``limit`` with its fences, cut at a line break."""
    overhead = measure(MarkdownBlock("", block.fence, block.info).render())
    room = limit - overhead
    if room < 1:
        raise ValueError(f"a limit of {limit} cannot hold a code block's fences")
    if measure(block.text) <= room:
        return block, None
    head, rest = "", block.text
    for line in block.text.splitlines(keepends=True):
        if measure(head + line) > room:
            break
        head += line
    if not head:  # one line longer than a message: cut it anywhere
        cut = room - 1
        while cut > 1 and measure(rest[:cut] + "\n") > room:
            cut -= 1
        head = rest[:cut] + "\n"
        return MarkdownBlock(head, block.fence, block.info), MarkdownBlock(rest[cut:], block.fence, block.info)
    return MarkdownBlock(head, block.fence, block.info), MarkdownBlock(rest[len(head):], block.fence, block.info)


def split_markdown(markdown: str, limit: int, measure: Measure = len) -> list[str]:
    """``markdown`` as pieces each within ``limit`` (by ``measure``), no code block split open.

    Raises:
        ValueError: a limit too small to hold a fenced code block.
    """
    if limit < _MIN_LIMIT:
        raise ValueError(f"limit must be at least {_MIN_LIMIT}, got {limit}")
    pieces: list[str] = []
    current = ""

    def flush() -> None:
        nonlocal current
        if current.strip():
            pieces.append(current.strip("\n"))
        current = ""

    block: MarkdownBlock | None
    for block in markdown_blocks(markdown):
        while block is not None:
            joiner = "\n" if current and not current.endswith("\n") and block.fence else ""
            room = limit - measure(current + joiner)
            if block.fence:
                rendered = block.render()
                if measure(rendered) <= room:
                    current += joiner + rendered
                    block = None
                    continue
                if current.strip() and measure(MarkdownBlock(block.text.split("\n", 1)[0] + "\n", block.fence, block.info).render()) > room:
                    flush()
                    continue
                head, rest = _cut_code(block, room if current.strip() else limit, measure)
                current += (joiner if current.strip() else "") + head.render()
                flush()
                block = rest
            else:
                taken, left, clean = _cut_text(block.text, room, measure) if room > 0 else ("", block.text, False)
                if left and current.strip() and (not clean or not taken.strip()):
                    flush()  # a word is not cut where a fresh message would hold it
                    continue
                current += taken
                if left:
                    flush()
                    left = left.lstrip("\n")
                block = MarkdownBlock(left) if left else None
    flush()
    return pieces


def converted_chunks(markdown: str, limit: int, convert: Callable[[str], str], measure: Measure = len) -> list[str]:
    """``markdown`` split within ``limit`` and each piece converted to a platform's dialect by ``convert``,
    every converted piece within ``limit`` too: where tags and escapes made one longer, that piece is
    split smaller and converted again. Empty pieces are dropped."""
    chunks: list[str] = []
    pending = [(piece, limit) for piece in split_markdown(markdown, limit, measure)]
    while pending:
        piece, size = pending.pop(0)
        converted = convert(piece)
        if measure(converted) <= limit:
            if converted.strip():
                chunks.append(converted)
            continue
        smaller = max(size * 3 // 4, 64)
        pending[:0] = [(part, smaller) for part in split_markdown(piece, smaller, measure)]
    return chunks
