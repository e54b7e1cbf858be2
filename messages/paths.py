"""Actor paths: the one place a path in the tree is built or taken apart.

A path is the names from the root down, joined by ``/``:
``sessions/session:ab12/turn/tool:call_3``. Both sides of the control
socket use these helpers (the client is Trio-free, so they live here).
"""

from __future__ import annotations

__all__ = [
    "SESSIONS",
    "child_path",
    "session_id_of",
    "session_name",
    "session_named",
    "session_path",
    "split_path",
]

#: The supervisor of every top-level session.
SESSIONS = "sessions"
_SESSION_PREFIX = "session:"


def child_path(parent: str, name: str) -> str:
    """The path of ``name`` under ``parent`` (the root's path is empty)."""
    return f"{parent}/{name}" if parent else name


def split_path(path: str) -> list[str]:
    """The names along ``path``, root first."""
    return path.split("/") if path else []


def session_name(session_id: str) -> str:
    """A session's name under the sessions supervisor: ``session:<id>``."""
    return f"{_SESSION_PREFIX}{session_id}"


def session_path(session_id: str) -> str:
    """A top-level session's path: ``sessions/session:<id>``."""
    return child_path(SESSIONS, session_name(session_id))


def session_id_of(path: str) -> str | None:
    """The id of the top-level session ``path`` lies in (itself or a descendant), or None."""
    names = split_path(path)
    if len(names) >= 2 and names[0] == SESSIONS and names[1].startswith(_SESSION_PREFIX):
        return names[1][len(_SESSION_PREFIX):]
    return None


def session_named(ref: str) -> str:
    """The id of the top-level session a reference names: a session path (or a path below it),
    ``session:<id>``, or the bare id itself (which may name no session at all)."""
    return session_id_of(ref) or session_id_of(child_path(SESSIONS, ref)) or ref
