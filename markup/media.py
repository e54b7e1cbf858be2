"""``MEDIA:/path`` tags: how a reply on a messaging platform asks for a file to be attached."""

from __future__ import annotations

import re

__all__ = ["extract_media"]

# A tag stands alone (line start or after a space) and names an absolute path; sentence punctuation
# right after it is not part of the path.
_TAG = re.compile(r"(?<!\S)MEDIA:\s?(?P<path>/[^\s`'\"<>]+?)(?P<tail>[.,;:!?)\]]*)(?=\s|$)")


def extract_media(text: str) -> tuple[str, list[str]]:
    """The reply without its ``MEDIA:`` tags, and the paths they named, in order, each once."""
    paths: list[str] = []

    def take(match: re.Match[str]) -> str:
        if match["path"] not in paths:
            paths.append(match["path"])
        return ""

    stripped = _TAG.sub(take, text)
    if not paths:
        return text, []
    cleaned = re.sub(r"[ \t]+(?=\n|$)", "", re.sub(r"(?<=\S)[ \t]{2,}", " ", stripped))
    cleaned = re.sub(r"\n{3,}", "\n\n", cleaned).strip()
    return cleaned, paths
