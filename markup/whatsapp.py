"""The model's Markdown as WhatsApp messages: WhatsApp's own formatting, split at its 4,096 characters.

WhatsApp marks bold ``*one star*``, italics ``_underscores_``, strike ``~one tilde~``, inline code with
single backticks and blocks with triple ones; it has no links with labels, headings or tables. A link is
written ``label (address)`` (the address is made clickable by the app), a heading is a bold line, a table
is kept as monospace, bullets become ``•``. Every piece is converted on its own, so each renders alone; a
marker the model left open (a lone ``**``) stays literal text.
"""

from __future__ import annotations

from markup.marks import Marks
from markup.split import converted_chunks

__all__ = ["WHATSAPP_LIMIT", "to_whatsapp", "whatsapp_chunks"]

#: The longest text message the Cloud API takes, in characters.
WHATSAPP_LIMIT = 4096


def _link(label: str, url: str) -> str:
    return url if label == url else f"{label} ({url})"


_FORMATTING = Marks(_link, quote="> ")


def to_whatsapp(markdown: str) -> str:
    """``markdown`` in WhatsApp's formatting (not split)."""
    return _FORMATTING.render(markdown)


def whatsapp_chunks(markdown: str, limit: int = WHATSAPP_LIMIT) -> list[str]:
    """The reply as WhatsApp messages, each within ``limit`` characters."""
    return converted_chunks(markdown, limit, to_whatsapp)
