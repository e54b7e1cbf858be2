"""Small JSON state files of the front doors (a bot's update offset, its chats' sessions, the pairing
book): written whole and atomically, private to the daemon's user. Blocking: call from a thread."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tools.files import atomic_write

__all__ = ["read_json", "write_json"]


def read_json(path: Path) -> Any:
    """The file's JSON value; None when it is missing or does not parse."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def write_json(path: Path, value: Any) -> None:
    """Replace the file with ``value`` in one step (a reader sees the old or the new), mode 0600, in a
    0700 directory created if missing."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    atomic_write(path, json.dumps(value).encode("utf-8"), new_file_mode=0o600)
