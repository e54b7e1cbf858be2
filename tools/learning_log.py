"""The learning loop's changelog: what the background review and the skills curator changed in memory
and skills, and why.

One JSON object a line in ``HERMES_ACTORS_HOME/learning/changes.jsonl`` (0600, in a 0700 directory),
appended under an ``fcntl`` lock so reviews of several sessions and processes never interleave a line.
``hermes-actors memory`` and ``hermes-actors skills log`` read it; the attach client is told by an event.
Every text kept is redacted first: the log is read by people and printed in terminals. Blocking: run the
writer in a worker thread.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any, Final

import attrs

from tools.redact import redact_secrets

__all__ = ["LearnedChange", "changes_from_call", "log_path", "read_changes", "record_changes"]

log = logging.getLogger(__name__)

#: Longest entry text or reason kept in a line (the stores hold the whole text).
_PREVIEW: Final = 160
#: How much of the log's end a reader looks at: enough for hundreds of changes.
_TAIL_BYTES: Final = 256 * 1024
_DONE: Final = {
    "add": "added", "replace": "replaced", "remove": "removed", "create": "created", "edit": "edited",
    "patch": "patched", "delete": "deleted", "write_file": "file written", "remove_file": "file removed",
    "archive": "archived", "stale": "marked stale", "active": "in use again",
}
_STORE_NAMES: Final = {"memory": "memory", "user": "user profile"}


@attrs.frozen
class LearnedChange:
    """One change the review made.

    Attributes:
        at: when, ISO 8601 in UTC.
        session_id: the session whose turn was reviewed (``curator`` for the skills curator's changes).
        store: ``memory``, ``user`` (the user profile) or ``skill``.
        action: what the tool did (add, replace, remove; create, patch, edit, ...).
        subject: the entry's text, or the skill's name.
        reason: why, in the review model's words (empty when it gave none).
    """

    at: str
    session_id: str
    store: str
    action: str
    subject: str
    reason: str = ""

    def headline(self) -> str:
        """What was changed, without the text: ``user profile added``, ``skill 'deploy' created``."""
        done = _DONE.get(self.action, self.action)
        if self.store == "skill":
            return f"skill '{self.subject}' {done}"
        return f"{_STORE_NAMES.get(self.store, self.store)} {done}"

    def describe(self) -> str:
        """One line for a person: ``user profile added: "Prefers tabs" (why: said so twice)``."""
        what = self.headline() if self.store == "skill" else f'{self.headline()}: "{self.subject}"'
        return f"{what} (why: {self.reason})" if self.reason else what


def log_path(home: Path) -> Path:
    """Where the changelog of ``home`` lives."""
    return home / "learning" / "changes.jsonl"


def _preview(text: str) -> str:
    text = redact_secrets(" ".join(text.split()))
    return text if len(text) <= _PREVIEW else text[: _PREVIEW - 1] + "…"


def changes_from_call(
    name: str, args: Mapping[str, Any], *, session_id: str, reason: str, at: str
) -> list[LearnedChange]:
    """The changes one successful ``memory`` or ``skill_manage`` call made, as the log keeps them."""
    why = _preview(reason)
    if name == "skill_manage":
        return [LearnedChange(at, session_id, "skill", str(args.get("action", "")), _preview(str(args.get("name", ""))), why)]
    if name != "memory":
        return []
    store = str(args.get("target", "memory"))
    raw = args.get("operations") or [args]
    changes = []
    for op in raw if isinstance(raw, list) else []:
        if not isinstance(op, Mapping) or not op.get("action"):
            continue
        text = str(op.get("content") or op.get("old_text") or "")
        changes.append(LearnedChange(at, session_id, store, str(op["action"]), _preview(text), why))
    return changes


def record_changes(home: Path, changes: Collection[LearnedChange]) -> None:
    """Append ``changes`` to the log of ``home`` (blocking)."""
    if not changes:
        return
    path = log_path(home)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    data = "".join(json.dumps(attrs.asdict(change), ensure_ascii=False) + "\n" for change in changes).encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, data)
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def read_changes(home: Path, stores: Collection[str] | None = None, limit: int = 20) -> list[LearnedChange]:
    """The newest ``limit`` changes (oldest first) to ``stores`` (all when None); a damaged line is skipped
    with a warning in the log."""
    path = log_path(home)
    try:
        with path.open("rb") as file:
            size = file.seek(0, os.SEEK_END)
            file.seek(max(0, size - _TAIL_BYTES))
            tail = file.read()
    except FileNotFoundError:
        return []
    lines = tail.split(b"\n")
    if len(tail) < size:
        lines = lines[1:]  # the first line was cut by the seek
    found = []
    for number, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            change = LearnedChange(**json.loads(line))
        except (ValueError, TypeError) as exc:
            log.warning("%s: line %d of the tail is not a change (%s); skipped", path, number + 1, exc)
            continue
        if stores is None or change.store in stores:
            found.append(change)
    return found[-limit:] if limit > 0 else []
