"""The model's Markdown as Slack messages: ``mrkdwn``, split at Slack's 40,000 characters.

Slack's ``mrkdwn`` is not Markdown: bold is ``*one star*``, italics ``_underscores_``, strike ``~one
tilde~``, a link ``<url|label>``, and it has no headings, tables or code languages. ``&``, ``<`` and ``>``
are control characters there and are escaped everywhere except in the markup this module writes (a
quote's leading ``>`` stays, as Slack reads it). Every piece is converted on its own, so each renders
alone; a marker the model left open (a lone ``**``) stays literal text.
"""

from __future__ import annotations

import re

from markup.inline import BULLET, EMPHASIS_GROUPS, HEADING, INLINE, QUOTE, RULE
from markup.split import converted_chunks, markdown_blocks

__all__ = ["SLACK_LIMIT", "slack_chunks", "slack_escape", "to_mrkdwn"]

#: The longest message text Slack keeps (it truncates past it), in characters.
SLACK_LIMIT = 40_000

_TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$")
_SAFE_URL = re.compile(r"^(https?|mailto):", re.IGNORECASE)
#: Slack has no spoilers: one is left as the model wrote it.
_MARKS = {"bold": "*", "strike": "~", "italic": "_", "spoiler": "||"}


def slack_escape(text: str) -> str:
    """``text`` with Slack's three control characters escaped (``&``, ``<``, ``>``)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _inline(text: str) -> str:
    """One line's inline Markdown as mrkdwn, everything else escaped."""
    out: list[str] = []
    position = 0
    for match in INLINE.finditer(text):
        out.append(slack_escape(text[position:match.start()]))
        position = match.end()
        if match["code"]:
            out.append(f"`{slack_escape(match['code_text'].strip())}`")
        elif match["link_text"] is not None:
            label, url = _inline(match["link_text"]), match["url"]
            # A | or > in the address would end Slack's link early: such an address is shown as text.
            safe = _SAFE_URL.match(url) and not re.search(r"[|<>]", url)
            out.append(f"<{url}|{label}>" if safe else f"{label} ({slack_escape(url)})")
        else:
            group, kind = next((group, kind) for group, kind in EMPHASIS_GROUPS if match[group] is not None)
            mark = _MARKS[kind]
            out.append(f"{mark}{_inline(match[group])}{mark}")
    out.append(slack_escape(text[position:]))
    return "".join(out)


def _text_lines(text: str) -> list[str]:
    """Block-level Markdown outside code: headings bold, bullets as •, quotes kept, tables as code."""
    out: list[str] = []
    table: list[str] = []
    for line in text.split("\n"):
        if _TABLE_ROW.match(line):
            table.append(slack_escape(line))
            continue
        if table:
            out.extend(["```", *table, "```"] if len(table) > 1 else table)
            table = []
        heading, bullet, quoted = HEADING.match(line), BULLET.match(line), QUOTE.match(line)
        if quoted is not None:
            out.append(f">{_inline(quoted['text'])}")
        elif heading is not None:
            out.append(f"*{_inline(heading['text'])}*")
        elif bullet is not None and not RULE.fullmatch(line):
            out.append(f"{bullet['indent']}• {_inline(bullet['text'])}")
        else:
            out.append(_inline(line))
    if table:
        out.extend(["```", *table, "```"] if len(table) > 1 else table)
    return out


def to_mrkdwn(markdown: str) -> str:
    """``markdown`` as Slack ``mrkdwn`` (not split)."""
    parts: list[str] = []
    for block in markdown_blocks(markdown):
        if block.fence:
            parts.append(f"```\n{slack_escape(block.text.rstrip(chr(10)))}\n```")
        else:
            parts.append("\n".join(_text_lines(block.text.strip("\n"))))
    return "\n".join(part for part in parts if part)


def slack_chunks(markdown: str, limit: int = SLACK_LIMIT) -> list[str]:
    """The reply as mrkdwn messages, each within ``limit`` characters."""
    return converted_chunks(markdown, limit, to_mrkdwn)
