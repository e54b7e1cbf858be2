"""The model's Markdown as Discord messages: its own dialect, split at 2,000 characters.

Discord renders most Markdown itself. What it does not is adapted: headings deeper than ``###``
become bold lines, and pipe tables, which it shows as raw pipes, go into a code block.
"""

from __future__ import annotations

import re

from markup.split import markdown_blocks, split_markdown

__all__ = ["DISCORD_LIMIT", "discord_chunks", "to_discord"]

#: Discord's longest message content, in characters.
DISCORD_LIMIT = 2000

_DEEP_HEADING = re.compile(r"^ {0,3}#{4,6}\s+(?P<text>.*?)\s*#*\s*$")
_TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$")


def _adapt_text(text: str) -> str:
    lines = text.split("\n")
    out: list[str] = []
    table: list[str] = []
    for line in lines:
        if _TABLE_ROW.match(line):
            table.append(line)
            continue
        if table:
            out.extend(["```", *table, "```"] if len(table) > 1 else table)
            table = []
        deep = _DEEP_HEADING.match(line)
        out.append(f"**{deep['text']}**" if deep is not None else line)
    if table:
        out.extend(["```", *table, "```"] if len(table) > 1 else table)
    return "\n".join(out)


def to_discord(markdown: str) -> str:
    """``markdown`` in Discord's dialect (not split)."""
    return "".join(block.render() if block.fence else _adapt_text(block.text) for block in markdown_blocks(markdown))


def discord_chunks(markdown: str) -> list[str]:
    """The reply as Discord messages, each within :data:`DISCORD_LIMIT` characters."""
    return split_markdown(to_discord(markdown), DISCORD_LIMIT)
