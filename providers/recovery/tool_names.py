"""Repair a misspelled tool name against the names actually registered.

Models call ``read-file``, ``ReadFile`` or ``web_serach``; an exact match after
normalising case and separators is taken first, then the closest name by
``difflib`` similarity. No match returns ``None`` so the caller can tell the
model which tools exist.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

DEFAULT_CUTOFF = 0.75
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SEPARATORS = re.compile(r"[\s\-./]+")


def normalize_tool_name(name: str) -> str:
    """``ReadFile`` / ``read-file`` / `` read file `` -> ``read_file``."""
    name = _CAMEL.sub("_", name.strip())
    return _SEPARATORS.sub("_", name).lower().strip("_")


def repair_tool_name(name: str, registered: Iterable[str], *, cutoff: float = DEFAULT_CUTOFF) -> str | None:
    """The registered tool ``name`` most likely meant, or ``None``.

    Args:
        name: the tool name the model used.
        registered: the names of the tools offered to the model.
        cutoff: the lowest ``difflib`` similarity (0..1) accepted as a match.
    """
    names = list(registered)
    if name in names:
        return name
    by_normal = {normalize_tool_name(n): n for n in names}
    wanted = normalize_tool_name(name)
    if wanted in by_normal:
        return by_normal[wanted]
    close = difflib.get_close_matches(wanted, list(by_normal), n=1, cutoff=cutoff)
    return by_normal[close[0]] if close else None
