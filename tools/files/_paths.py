"""Path handling shared by the file and search tools."""

from __future__ import annotations

import difflib
import os
from pathlib import Path

from tools.errors import ToolInputError
from tools.jail.policy import JailPolicy

__all__ = ["BINARY_SNIFF_BYTES", "looks_binary", "not_found", "resolve_path", "similar_names"]

BINARY_SNIFF_BYTES = 8_192


def resolve_path(cwd: str, raw: str) -> Path:
    """Resolve a model-given path: ``~`` expanded, relative paths against the session's cwd.

    Raises:
        ToolInputError: the path holds a NUL byte or a character no file name can (a lone surrogate).
    """
    try:
        os.fsencode(raw)
    except UnicodeEncodeError:
        raise ToolInputError(f"Invalid path {raw!r}: it holds a character no file name can contain.") from None
    if "\x00" in raw:
        raise ToolInputError(f"Invalid path {raw!r}: it holds a NUL byte.")
    path = Path(os.path.expanduser(raw))
    if not path.is_absolute():
        path = Path(cwd) / path
    return Path(os.path.normpath(path))


def looks_binary(head: bytes) -> bool:
    """True when the first bytes of a file contain a NUL byte (text files practically never do)."""
    return b"\x00" in head


def not_found(shown: str, host: str, policy: JailPolicy, advice: str = "") -> ToolInputError:
    """The error for a missing file ``shown`` (at ``host``), naming similar files the policy shows."""
    hint = similar_names(Path(host), policy)
    suffix = f" Similar names in {os.path.dirname(shown)}: {', '.join(hint)}." if hint else ""
    return ToolInputError(f"File not found: {shown}.{suffix}{advice}")


def similar_names(path: Path, policy: JailPolicy, limit: int = 5) -> list[str]:
    """Names in ``path``'s directory that look like ``path``'s name (for "did you mean"), none hidden."""
    if policy.hiding_rule(str(path.parent)) is not None:
        return []
    try:
        siblings = [entry.name for entry in os.scandir(path.parent) if policy.hiding_rule(entry.path) is None]
    except OSError:
        return []
    return difflib.get_close_matches(path.name, siblings, n=limit, cutoff=0.5)
