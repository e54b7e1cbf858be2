"""The permanent allow list: dangerous patterns the user answered ``always`` for.

It lives in ``config.yaml`` as ``approvals.allow`` (a list of pattern keys), so it holds
across daemon restarts. Adding a key rewrites only the file's ``approvals`` section (or
appends one): the other sections, their comments and their order stay as the user wrote
them.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import trio
import yaml

__all__ = ["AllowListError", "PermanentAllows", "add_to_config_file"]

log = logging.getLogger(__name__)

_SECTION = re.compile(r"^approvals\s*:")


class AllowListError(RuntimeError):
    """``config.yaml`` could not be updated (unreadable, not a mapping, not writable)."""


class PermanentAllows:
    """Pattern keys allowed for good, and the ``config.yaml`` they are saved in.

    Args:
        keys: the keys ``config.yaml`` held when the daemon started.
        config_path: where new keys are saved; None keeps them in memory only (tests, embedded use).
    """

    def __init__(self, keys: Iterable[str] = (), config_path: Path | None = None) -> None:
        self._keys = set(keys)
        self._path = config_path
        self._lock = trio.Lock()

    def covers(self, keys: Iterable[str]) -> bool:
        """True when every key is allowed for good."""
        return all(key in self._keys for key in keys)

    def snapshot(self) -> list[str]:
        """The allowed keys, sorted."""
        return sorted(self._keys)

    async def add(self, keys: Iterable[str]) -> None:
        """Allow ``keys`` for good and save them.

        Raises:
            AllowListError: the file could not be updated (the keys stay allowed until the daemon stops).
        """
        new = [key for key in keys if key not in self._keys]
        self._keys.update(new)
        if not new or self._path is None:
            return
        async with self._lock:  # two sessions answering "always" at once must not lose a key
            await trio.to_thread.run_sync(add_to_config_file, self._path, new)
        log.info("approvals.allow in %s: added %s", self._path, ", ".join(new))


def add_to_config_file(path: Path, keys: list[str]) -> None:
    """Add ``keys`` to ``approvals.allow`` in the YAML file at ``path`` (created if missing).

    Raises:
        AllowListError: the file is not valid YAML, not a mapping, or cannot be written.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    except OSError as exc:
        raise AllowListError(f"{path}: cannot read: {exc.strerror}") from exc
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise AllowListError(f"{path}: not valid YAML") from exc
    section = data.get("approvals") if isinstance(data, dict) else None
    if not isinstance(data, dict) or not isinstance(section or {}, dict):
        raise AllowListError(f"{path}: expected a mapping with an 'approvals' mapping")
    section = dict(section or {})
    allow = [str(key) for key in section.get("allow") or []]
    section["allow"] = allow + [key for key in keys if key not in allow]
    wanted = {**data, "approvals": section}
    updated = _replace_section(text, section)
    if _load(updated) != wanted:
        # An unusual layout (an anchor, a section split by a document marker): write it whole.
        updated = yaml.safe_dump(wanted, sort_keys=False, allow_unicode=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        temporary.write_text(updated, encoding="utf-8")
        os.replace(temporary, path)
    except OSError as exc:
        temporary.unlink(missing_ok=True)
        raise AllowListError(f"{path}: cannot write: {exc.strerror}") from exc


def _replace_section(text: str, section: dict[str, Any]) -> str:
    """``text`` with its top-level ``approvals:`` block replaced by ``section`` (appended when absent)."""
    block = yaml.safe_dump({"approvals": section}, sort_keys=False, allow_unicode=True)
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if _SECTION.match(line)), None)
    if start is None:
        separator = "" if not text or text.endswith("\n") else "\n"
        return f"{text}{separator}{block}"
    end = start + 1
    # The block goes on while lines are indented (or blank between indented ones); a comment
    # at the left margin belongs to what follows.
    while end < len(lines) and (not lines[end].strip() or lines[end][0] in " \t"):
        end += 1
    while end > start + 1 and not lines[end - 1].strip():
        end -= 1
    return "".join(lines[:start]) + block + "".join(lines[end:])


def _load(text: str) -> Any:
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return None
