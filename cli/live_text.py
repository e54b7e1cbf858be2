"""Streamed text in the interactive client: what may be committed to the screen, what stays live.

A terminal line that is still growing must never be written above the prompt:
the prompt redraws itself over it (prompt_toolkit erases from where it thinks
the prompt starts, and a wrapped partial line moves that), and the text is
wiped. So the client commits only finished pieces and shows the rest in the
region the prompt owns (:func:`live_rows`, drawn above ``>``):

- answers (markdown) are committed a block at a time, rendered by rich as each
  block closes (a blank line, a closing code fence, a heading);
- reasoning is committed a line at a time.
"""

from __future__ import annotations

import textwrap

__all__ = ["LineBuffer", "MarkdownBlocks", "live_rows"]


class LineBuffer:
    """Streamed text cut into whole lines; the partial last line stays open."""

    def __init__(self) -> None:
        self.open = ""

    def feed(self, text: str) -> list[str]:
        """Add ``text``; the lines it completed (without their newlines)."""
        *done, self.open = (self.open + text).split("\n")
        return done

    def finish(self) -> str | None:
        """The open line, now final (None when empty)."""
        rest, self.open = self.open, ""
        return rest or None


class MarkdownBlocks:
    """Streamed markdown cut into top-level blocks as they close.

    A block closes at a blank line outside a code fence, at its closing fence,
    or after an ATX heading line; a fence opening closes the paragraph before it.
    """

    def __init__(self) -> None:
        self._lines = LineBuffer()
        self._block: list[str] = []
        # Invariant: the opening marker (``` or ~~~, maybe longer) while inside a code fence, else "".
        self._fence = ""

    def feed(self, text: str) -> list[str]:
        """Add ``text``; the markdown source of each block it closed."""
        closed: list[str] = []
        for line in self._lines.feed(text):
            closed.extend(self._line(line))
        return closed

    def finish(self) -> str | None:
        """Everything still open, as the last block (None when nothing is)."""
        rest = self._lines.finish()
        if rest is not None:
            self._block.append(rest)
        self._fence = ""
        return self._close()

    def open_text(self) -> str:
        """The open block as streamed so far (shown live, plain)."""
        return "\n".join([*self._block, self._lines.open]) if self._block else self._lines.open

    def _line(self, line: str) -> list[str]:
        stripped = line.strip()
        if self._fence:
            self._block.append(line)
            marker = self._fence[0]
            if stripped.startswith(self._fence) and not stripped.strip(marker):
                self._fence = ""
                return self._closed()
            return []
        fence = _fence_marker(stripped)
        if fence:
            closed = self._closed()
            self._fence = fence
            self._block = [line]
            return closed
        if not stripped:
            return self._closed()
        if stripped.startswith("#") and stripped.lstrip("#").startswith(" "):
            closed = self._closed()
            self._block = [line]
            return closed + self._closed()
        self._block.append(line)
        return []

    def _closed(self) -> list[str]:
        block = self._close()
        return [block] if block is not None else []

    def _close(self) -> str | None:
        block, self._block = self._block, []
        text = "\n".join(block)
        return text if text.strip() else None


def _fence_marker(stripped: str) -> str:
    """The fence marker a line opens with (three or more backticks or tildes), or ""."""
    for marker in ("`", "~"):
        run = len(stripped) - len(stripped.lstrip(marker))
        if run >= 3:
            return marker * run
    return ""


def live_rows(text: str, width: int, max_rows: int) -> list[str]:
    """The last ``max_rows`` terminal rows ``text`` takes at ``width`` columns (wrapped at spaces where it can).

    Only the lines that reach the screen are wrapped (from the end), so a long block costs no more per redraw
    than a short one.
    """
    if max_rows <= 0:
        return []
    width = max(1, width)
    rows: list[str] = []
    for line in reversed(text.split("\n")):
        rows[:0] = textwrap.wrap(line, width, expand_tabs=False, replace_whitespace=False) or [""]
        if len(rows) >= max_rows:
            break
    return rows[-max_rows:]
