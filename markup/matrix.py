"""The model's Markdown as Matrix messages: a plain ``body`` and an ``org.matrix.custom.html``
``formatted_body``, split at the configured length.

Telegram's HTML subset (``b``, ``i``, ``s``, ``code``, ``pre``, ``a``, ``blockquote``) is a subset of the
HTML the Matrix spec recommends clients render, so the same converter writes it; Matrix has its own
spoiler (``<span data-mx-spoiler>``), and its HTML keeps no line breaks outside ``pre``, so they become
``<br>``. The plain body is the Markdown itself, which clients without HTML show as it was written.
"""

from __future__ import annotations

import re

from markup.split import split_markdown
from markup.telegram import to_telegram_html

__all__ = ["to_matrix_html", "matrix_chunks"]

_PRE = re.compile(r"(<pre>.*?</pre>)", re.DOTALL)


def to_matrix_html(markdown: str) -> str:
    """``markdown`` as Matrix's ``org.matrix.custom.html`` (not split)."""
    rendered = to_telegram_html(markdown).replace("<tg-spoiler>", "<span data-mx-spoiler>").replace("</tg-spoiler>", "</span>")
    # Escaped text never holds a literal tag, so only the converter's own tags are rewritten above. A line
    # break beside a block (a quote, a code block) would be an empty line: blocks break lines themselves.
    rendered = rendered.replace("</blockquote>\n", "</blockquote>")
    return "".join(part if part.startswith("<pre>") else part.strip("\n").replace("\n", "<br>") for part in _PRE.split(rendered))


def matrix_chunks(markdown: str, limit: int) -> list[tuple[str, str]]:
    """The reply as messages of at most ``limit`` characters of Markdown: each its plain body and its HTML."""
    return [(piece, to_matrix_html(piece)) for piece in split_markdown(markdown, limit) if piece.strip()]
