"""Markdown in a chat app's one-character marks (Slack's ``mrkdwn``, WhatsApp's formatting): bold ``*x*``,
italics ``_x_``, strike ``~x~``, code in backticks; headings as bold lines, bullets as ``•``, quotes kept,
tables as code. What differs between the apps is given: how plain text is escaped, how a link is written,
and how a quote's line starts."""

from __future__ import annotations

import re
from collections.abc import Callable

import attrs

from markup.inline import BULLET, EMPHASIS_GROUPS, HEADING, INLINE, QUOTE, RULE
from markup.split import markdown_blocks

__all__ = ["Marks"]

_TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$")
#: Neither app has spoilers: one is left as the model wrote it.
_MARKS = {"bold": "*", "strike": "~", "italic": "_", "spoiler": "||"}


def _unchanged(text: str) -> str:
    return text


@attrs.frozen
class Marks:
    """One app's dialect of the marks.

    Attributes:
        link: a link's text from its rendered label and its address.
        escape: plain text (and code) made safe for the app.
        quote: what starts a quoted line.
    """

    link: Callable[[str, str], str]
    escape: Callable[[str], str] = _unchanged
    quote: str = ">"

    def inline(self, text: str) -> str:
        """One line's inline Markdown in the marks, everything else escaped."""
        out: list[str] = []
        position = 0
        for match in INLINE.finditer(text):
            out.append(self.escape(text[position:match.start()]))
            position = match.end()
            if match["code"]:
                out.append(f"`{self.escape(match['code_text'].strip())}`")
            elif match["link_text"] is not None:
                out.append(self.link(self.inline(match["link_text"]), match["url"]))
            else:
                group, kind = next((group, kind) for group, kind in EMPHASIS_GROUPS if match[group] is not None)
                mark = _MARKS[kind]
                out.append(f"{mark}{self.inline(match[group])}{mark}")
        out.append(self.escape(text[position:]))
        return "".join(out)

    def lines(self, text: str) -> list[str]:
        """Block-level Markdown outside code: headings bold, bullets as •, quotes kept, tables as code."""
        out: list[str] = []
        table: list[str] = []
        for line in text.split("\n"):
            if _TABLE_ROW.match(line):
                table.append(self.escape(line))
                continue
            if table:
                out.extend(["```", *table, "```"] if len(table) > 1 else table)
                table = []
            heading, bullet, quoted = HEADING.match(line), BULLET.match(line), QUOTE.match(line)
            if quoted is not None:
                out.append(f"{self.quote}{self.inline(quoted['text'])}")
            elif heading is not None:
                out.append(f"*{self.inline(heading['text'])}*")
            elif bullet is not None and not RULE.fullmatch(line):
                out.append(f"{bullet['indent']}• {self.inline(bullet['text'])}")
            else:
                out.append(self.inline(line))
        if table:
            out.extend(["```", *table, "```"] if len(table) > 1 else table)
        return out

    def render(self, markdown: str) -> str:
        """``markdown`` in the marks (not split)."""
        parts: list[str] = []
        for block in markdown_blocks(markdown):
            if block.fence:
                parts.append(f"```\n{self.escape(block.text.rstrip(chr(10)))}\n```")
            else:
                parts.append("\n".join(self.lines(block.text.strip("\n"))))
        return "\n".join(part for part in parts if part)
