"""Which user skills the agent wrote, and when each was last used: what the curator judges them by.

A sidecar, ``HERMES_ACTORS_HOME/skills/.usage.json`` (the SKILL.md files stay the author's), keyed by skill
name. The skill tools keep it: ``skill_manage`` ``create`` marks a skill as the agent's (the model's own,
the background review's, the curator's), its other actions and ``skill_view`` count as a use, ``delete``
drops the record. A skill written by hand or with ``hermes-actors skills create`` has no record and is
never curated (as in Hermes: provenance is recorded, not guessed from where a file lies). Updates are
made under an ``fcntl`` lock and written atomically; a damaged sidecar reads as empty, with a warning.
Blocking: call from a worker thread.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Final

import attrs

from tools.files import atomic_write

__all__ = ["SkillUsage", "UsageState", "forget", "held", "note_created", "note_used", "read_usage", "set_state"]

log = logging.getLogger(__name__)

_FILE: Final = ".usage.json"
_LOCK: Final = ".usage.lock"


class UsageState:
    """A curated skill's lifecycle: in use, or unused for ``curator.stale_after_days``."""

    ACTIVE: Final = "active"
    STALE: Final = "stale"


@attrs.frozen
class SkillUsage:
    """What is known of one agent-created skill.

    Attributes:
        created_at: when the agent created it, ISO 8601 with its offset.
        last_used_at: when it was last viewed or changed (None: never since it was created).
        use_count: how many times.
        state: ``active`` or ``stale``.
    """

    created_at: str
    last_used_at: str | None = None
    use_count: int = 0
    state: str = UsageState.ACTIVE

    def last_activity(self) -> datetime:
        """When it was last used, else when it was created."""
        return datetime.fromisoformat(self.last_used_at or self.created_at)


def _path(home: Path) -> Path:
    return home / "skills" / _FILE


def read_usage(home: Path) -> dict[str, SkillUsage]:
    """Every agent-created skill's record, by name (a damaged file or entry is skipped, with a warning)."""
    try:
        raw = json.loads(_path(home).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        log.warning("%s could not be read (%s); no skill counts as the agent's until it is written again", _path(home), exc)
        return {}
    records: dict[str, SkillUsage] = {}
    for name, entry in raw.items() if isinstance(raw, dict) else ():
        try:
            record = SkillUsage(**entry)
            record.last_activity()  # a date that does not parse is a damaged entry
        except (TypeError, ValueError) as exc:
            log.warning("%s: the entry of %r is damaged (%s); skipped", _path(home), name, exc)
            continue
        records[name] = record
    return records


@contextlib.contextmanager
def held(home: Path) -> Iterator[None]:
    """Hold the usage record's lock: no record changes meanwhile (the curator's backup and restore hold it)."""
    directory = home / "skills"
    directory.mkdir(parents=True, exist_ok=True)
    fd = os.open(directory / _LOCK, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


@contextlib.contextmanager
def _locked(home: Path) -> Iterator[dict[str, SkillUsage]]:
    """The records, for changing in place under the lock; written back when the block changed them."""
    with held(home):
        records = read_usage(home)
        before = dict(records)
        yield records
        if records != before:
            data = {name: attrs.asdict(record) for name, record in sorted(records.items())}
            atomic_write(_path(home), json.dumps(data, indent=1).encode("utf-8"), new_file_mode=0o600)


def _update(home: Path, name: str, change: Callable[[SkillUsage | None], SkillUsage | None]) -> None:
    with _locked(home) as records:
        updated = change(records.get(name))
        if updated is None:
            records.pop(name, None)
        else:
            records[name] = updated


def note_created(home: Path, name: str, at: datetime) -> None:
    """The agent created skill ``name`` at ``at``: it is the agent's, and the curator's to keep."""
    _update(home, name, lambda _: SkillUsage(at.isoformat(timespec="seconds")))


def note_used(home: Path, name: str, at: datetime) -> None:
    """Skill ``name`` was viewed or changed at ``at`` (nothing for a skill the agent did not create)."""
    stamp = at.isoformat(timespec="seconds")
    _update(home, name, lambda old: None if old is None else attrs.evolve(
        old, last_used_at=stamp, use_count=old.use_count + 1, state=UsageState.ACTIVE))


def set_state(home: Path, name: str, state: str) -> None:
    """Mark skill ``name`` ``active`` or ``stale``."""
    _update(home, name, lambda old: None if old is None else attrs.evolve(old, state=state))


def forget(home: Path, name: str) -> None:
    """Skill ``name`` is gone (deleted or archived): drop its record."""
    _update(home, name, lambda _: None)
