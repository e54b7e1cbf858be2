"""Names the model sees for MCP tools: Hermes's ``mcp_<server>_<tool>``, made safe for every provider.

Providers accept tool names matching ``^[a-zA-Z0-9_-]{1,64}$``. Hermes builds ``mcp_<server>_<tool>``
with every other character of the server's and the tool's names replaced by ``_``; so does this module,
and a name still too long keeps its first characters and ends in a short hash of the whole, so two
long names stay apart. Two tools of one server that sanitise to the same name are told apart by a
numbered suffix, in the order of their original names (stable across refreshes).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

__all__ = ["MAX_TOOL_NAME", "TOOLSET_PREFIX", "sanitise", "tool_names", "toolset_name"]

MAX_TOOL_NAME = 64
TOOLSET_PREFIX = "mcp-"
_UNSAFE = re.compile(r"[^A-Za-z0-9_]")
_HASH_CHARS = 8


def sanitise(text: str) -> str:
    """``text`` with each character outside ``[A-Za-z0-9_]`` replaced by ``_``."""
    return _UNSAFE.sub("_", text)


def toolset_name(server: str) -> str:
    """The toolset of a server's tools (``mcp-<server>``): the registry lets MCP toolsets refresh each other."""
    return TOOLSET_PREFIX + sanitise(server)


def _fit(name: str, whole: str) -> str:
    """``name`` cut to the providers' limit, ending in a hash of ``whole`` when it had to be cut."""
    if len(name) <= MAX_TOOL_NAME:
        return name
    digest = hashlib.sha256(whole.encode("utf-8")).hexdigest()[:_HASH_CHARS]
    return f"{name[: MAX_TOOL_NAME - _HASH_CHARS - 1]}_{digest}"


def tool_names(server: str, tools: Iterable[str]) -> dict[str, str]:
    """The model-facing name of each of ``server``'s ``tools``: ``{model name: tool name}``."""
    prefix = f"mcp_{sanitise(server)}_"
    names: dict[str, str] = {}
    for tool in sorted(set(tools)):
        base = _fit(prefix + sanitise(tool), f"{server}\0{tool}")
        name, n = base, 1
        while name in names:
            n += 1
            suffix = f"_{n}"
            name = base[: MAX_TOOL_NAME - len(suffix)] + suffix
        names[name] = tool
    return names
