"""The model's Markdown as Slack messages: ``mrkdwn``, split at Slack's 40,000 characters.

Slack's ``mrkdwn`` is not Markdown: bold is ``*one star*``, italics ``_underscores_``, strike ``~one
tilde~``, a link ``<url|label>``, and it has no headings, tables or code languages. ``&``, ``<`` and ``>``
are control characters there and are escaped everywhere except in the markup this module writes (a
quote's leading ``>`` stays, as Slack reads it). Every piece is converted on its own, so each renders
alone; a marker the model left open (a lone ``**``) stays literal text.
"""

from __future__ import annotations

import re

from markup.marks import Marks
from markup.split import converted_chunks

__all__ = ["SLACK_LIMIT", "slack_chunks", "slack_escape", "to_mrkdwn"]

#: The longest message text Slack keeps (it truncates past it), in characters.
SLACK_LIMIT = 40_000

_SAFE_URL = re.compile(r"^(https?|mailto):", re.IGNORECASE)


def slack_escape(text: str) -> str:
    """``text`` with Slack's three control characters escaped (``&``, ``<``, ``>``)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _link(label: str, url: str) -> str:
    # A | or > in the address would end Slack's link early: such an address is shown as text.
    safe = _SAFE_URL.match(url) and not re.search(r"[|<>]", url)
    return f"<{url}|{label}>" if safe else f"{label} ({slack_escape(url)})"


_MRKDWN = Marks(_link, slack_escape)


def to_mrkdwn(markdown: str) -> str:
    """``markdown`` as Slack ``mrkdwn`` (not split)."""
    return _MRKDWN.render(markdown)


def slack_chunks(markdown: str, limit: int = SLACK_LIMIT) -> list[str]:
    """The reply as mrkdwn messages, each within ``limit`` characters."""
    return converted_chunks(markdown, limit, to_mrkdwn)
