"""Small JSON state files of the front doors (a bot's update offset, its chats' sessions, the pairing
book): written whole and atomically, private to the daemon's user. Blocking: call from a thread."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

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
    temporary = path.with_suffix(".tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as file:
        json.dump(value, file)
    os.replace(temporary, path)
