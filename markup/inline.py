"""The Markdown a model writes, as the platforms' converters read it: one line's inline markup, and the
line-level forms (headings, quotes, bullets). Patterns only; each platform renders them its own way."""

from __future__ import annotations

import re

__all__ = ["BULLET", "EMPHASIS_GROUPS", "HEADING", "INLINE", "QUOTE", "RULE"]

# Code spans first (nothing inside them is markup), then links, then the emphasis markers.
INLINE = re.compile(
    r"(?P<code>`+)(?P<code_text>.+?)(?P=code)"
    r"|\[(?P<link_text>[^\]\n]+)\]\((?P<url>[^)\s]+)\)"
    r"|\*\*(?P<bold>(?=\S).+?(?<=\S))\*\*"
    r"|__(?P<bold2>(?=\S).+?(?<=\S))__"
    r"|~~(?P<strike>(?=\S).+?(?<=\S))~~"
    r"|\|\|(?P<spoiler>(?=\S).+?(?<=\S))\|\|"
    r"|(?<![\w*])\*(?P<italic>(?=\S)[^*\n]+?(?<=\S))\*(?![\w*])"
    r"|(?<![\w_])_(?P<italic2>(?=\S)[^_\n]+?(?<=\S))_(?![\w_])"
)
#: :data:`INLINE`'s emphasis groups, and the kind of emphasis each is.
EMPHASIS_GROUPS = (("bold", "bold"), ("bold2", "bold"), ("strike", "strike"), ("spoiler", "spoiler"), ("italic", "italic"), ("italic2", "italic"))
HEADING = re.compile(r"^ {0,3}#{1,6}\s+(?P<text>.*?)\s*#*\s*$")
QUOTE = re.compile(r"^ {0,3}> ?(?P<text>.*)$")
BULLET = re.compile(r"^(?P<indent>\s*)[-*+]\s+(?P<text>.*)$")
#: A thematic break (``---``), which a bullet's pattern would otherwise take.
RULE = re.compile(r"\s*([-*_])\s*(\1\s*){2,}")
