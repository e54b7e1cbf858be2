"""The model's Markdown as Telegram messages: its HTML ``parse_mode``, split at 4,096 UTF-16 units.

HTML rather than MarkdownV2: MarkdownV2 needs every one of eighteen characters escaped outside
entities and rejects the whole message for one miss, while HTML needs three escapes and only the
tags it knows. Every piece is converted on its own, so each piece's tags are balanced; a marker left
open by the model (a lone ``**``) stays literal text.
"""

from __future__ import annotations

import html
import re

from markup.inline import BULLET, EMPHASIS_GROUPS, HEADING, INLINE, QUOTE, RULE
from markup.split import converted_chunks, markdown_blocks, utf16_length

__all__ = ["TELEGRAM_LIMIT", "telegram_chunks", "to_telegram_html"]

#: Telegram's longest message text, in UTF-16 code units after entity parsing.
TELEGRAM_LIMIT = 4096

_SAFE_URL = re.compile(r"^(https?|tg|mailto):", re.IGNORECASE)
_TAGS = {"bold": "b", "strike": "s", "spoiler": "tg-spoiler", "italic": "i"}


def _inline(text: str) -> str:
    """One line's inline Markdown as Telegram HTML, everything else escaped."""
    out: list[str] = []
    position = 0
    for match in INLINE.finditer(text):
        out.append(html.escape(text[position:match.start()], quote=False))
        position = match.end()
        if match["code"]:
            out.append(f"<code>{html.escape(match['code_text'].strip(), quote=False)}</code>")
        elif match["link_text"] is not None:
            label = _inline(match["link_text"])
            url = match["url"]
            out.append(f'<a href="{html.escape(url)}">{label}</a>' if _SAFE_URL.match(url) else f"{label} ({html.escape(url, quote=False)})")
        else:
            tag, inner = next((_TAGS[kind], match[group]) for group, kind in EMPHASIS_GROUPS if match[group] is not None)
            out.append(f"<{tag}>{_inline(inner)}</{tag}>")
    out.append(html.escape(text[position:], quote=False))
    return "".join(out)


def _text_lines(text: str) -> list[str]:
    """Block-level Markdown outside code: headings bold, bullets as •, quotes as blockquotes."""
    out: list[str] = []
    quote: list[str] = []
    for line in text.split("\n"):
        quoted = QUOTE.match(line)
        if quoted is not None:
            quote.append(_inline(quoted["text"]))
            continue
        if quote:
            out.append("<blockquote>" + "\n".join(quote) + "</blockquote>")
            quote = []
        heading = HEADING.match(line)
        bullet = BULLET.match(line)
        if heading is not None:
            out.append(f"<b>{_inline(heading['text'])}</b>")
        elif bullet is not None and not RULE.fullmatch(line):
            out.append(f"{bullet['indent']}• {_inline(bullet['text'])}")
        else:
            out.append(_inline(line))
    if quote:
        out.append("<blockquote>" + "\n".join(quote) + "</blockquote>")
    return out


def to_telegram_html(markdown: str) -> str:
    """``markdown`` in Telegram's HTML ``parse_mode`` (not split)."""
    parts: list[str] = []
    for block in markdown_blocks(markdown):
        if block.fence:
            code = html.escape(block.text.rstrip("\n"), quote=False)
            language = re.sub(r"[^\w+#.-]", "", block.info.split()[0]) if block.info.split() else ""
            opening = f'<pre><code class="language-{language}">' if language else "<pre><code>"
            parts.append(f"{opening}{code}</code></pre>")
        else:
            parts.append("\n".join(_text_lines(block.text.strip("\n"))))
    return "\n".join(part for part in parts if part)


def telegram_chunks(markdown: str) -> list[str]:
    """The reply as Telegram HTML messages, each within :data:`TELEGRAM_LIMIT` UTF-16 units."""
    return converted_chunks(markdown, TELEGRAM_LIMIT, to_telegram_html, utf16_length)
