"""The skills curator's file work: which skills it may touch, its schedule, archiving, and its backups.

Only the agent's own skills are curated: user skills (``HERMES_ACTORS_HOME/skills``) with a record in the
usage sidecar (:mod:`tools.skills.usage`). Bundled, external and project skills, and user skills written by
hand, are never candidates. A skill is never deleted by the curator: it is archived, moved whole to
``skills/.archive/<name>`` (out of every listing, recoverable by moving it back). Before a run changes
anything the whole ``skills`` directory is copied to ``skills/.curator_backups/<id>/skills.tar.gz`` (as
Hermes does), the newest ``curator.backup.keep`` kept; a run that fails is undone from it. All blocking:
call from a worker thread.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tarfile
from collections.abc import Collection, Mapping
from datetime import datetime, timedelta
from pathlib import Path
from typing import Final

import attrs

from config.curator import CuratorConfig
from tools.files import atomic_write
from tools.skills import usage
from tools.skills.library import BUNDLED_DIR, SkillRoots, SkillSource, discover
from tools.skills.usage import SkillUsage, UsageState

__all__ = [
    "ARCHIVE_DIR",
    "BACKUP_DIR",
    "Candidate",
    "CurationError",
    "Transition",
    "archive",
    "candidates",
    "last_run",
    "plan_transitions",
    "record_run",
    "restore",
    "snapshot",
]

log = logging.getLogger(__name__)

ARCHIVE_DIR: Final = ".archive"
BACKUP_DIR: Final = ".curator_backups"
_STATE_FILE: Final = ".curator_state"
_SNAPSHOT: Final = "skills.tar.gz"
#: Entries of ``skills/`` a backup neither holds nor restores: the backups themselves, the usage lock, and
#: the schedule (an undone pass still ran: the next one counts from it).
_NOT_BACKED_UP: Final = frozenset({BACKUP_DIR, ".usage.lock", _STATE_FILE})


class CurationError(Exception):
    """A backup could not be taken or restored, or a skill could not be archived."""


@attrs.frozen
class Candidate:
    """An agent-created skill the curator may change.

    Attributes:
        name / description / directory: the skill's.
        usage: its usage record.
    """

    name: str
    description: str
    directory: Path
    usage: SkillUsage


def _skills(home: Path) -> Path:
    return home / "skills"


def candidates(home: Path) -> dict[str, Candidate]:
    """The agent-created user skills of ``home``, by name."""
    records = usage.read_usage(home)
    if not records:
        return {}
    # Only the user's root is read (and the bundled one, which a user skill of the same name shadows).
    catalog = discover(SkillRoots(user=_skills(home), bundled=BUNDLED_DIR))
    return {
        name: Candidate(name, skill.header.description, skill.directory, records[name])
        for name, skill in catalog.skills.items()
        if skill.source is SkillSource.USER and name in records
    }


@attrs.frozen
class Transition:
    """One change the curator's rules make: ``archive``, ``stale`` (marked) or ``active`` (used again)."""

    name: str
    action: str
    reason: str


def plan_transitions(
    found: Mapping[str, Candidate], config: CuratorConfig, now: datetime, protected: Collection[str] = ()
) -> list[Transition]:
    """What Hermes's rules do to ``found`` at ``now``: archive a skill unused for ``archive_after_days``,
    mark one unused for ``stale_after_days`` stale, make a stale one used since active again.

    A never-used skill younger than ``stale_after_days`` is left alone (it may not have come up yet), and a
    ``protected`` one (a cron job names it) is never archived or marked.
    """
    stale_cutoff = now - timedelta(days=config.stale_after_days)
    archive_cutoff = now - timedelta(days=config.archive_after_days)
    planned = []
    for name, candidate in sorted(found.items()):
        if name in protected:
            continue
        record = candidate.usage
        anchor = record.last_activity()
        idle = (now - anchor).days
        used = "never used" if record.use_count == 0 else "unused"
        if anchor <= archive_cutoff:
            planned.append(Transition(name, "archive", f"{used} for {idle} days (curator.archive_after_days: "
                                                       f"{config.archive_after_days})"))
        elif anchor <= stale_cutoff and record.state == UsageState.ACTIVE:
            planned.append(Transition(name, "stale", f"{used} for {idle} days (curator.stale_after_days: "
                                                     f"{config.stale_after_days})"))
        elif anchor > stale_cutoff and record.state == UsageState.STALE:
            planned.append(Transition(name, "active", "used again since it was marked stale"))
    return planned


def archive(home: Path, name: str, now: datetime) -> Path:
    """Move agent-created skill ``name`` whole to ``skills/.archive`` and drop its usage record; where it went.

    Raises:
        CurationError: it is not an agent-created skill, or it could not be moved.
    """
    candidate = candidates(home).get(name)
    if candidate is None:
        raise CurationError(f"{name!r} is not a skill the agent created; the curator leaves it alone")
    target = _skills(home) / ARCHIVE_DIR / name
    if target.exists():
        target = target.with_name(f"{name}-{now.strftime('%Y%m%dT%H%M%S')}")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        os.rename(candidate.directory, target)
    except OSError as exc:
        raise CurationError(f"{name!r} could not be archived: {exc.strerror or exc}") from exc
    usage.forget(home, name)
    return target


def snapshot(home: Path, keep: int, now: datetime) -> Path:
    """Copy ``skills/`` (its archive and records too) into a new backup, keeping the newest ``keep``; its path.

    Raises:
        CurationError: the backup could not be written (nothing is changed then).
    """
    skills = _skills(home)
    backups = skills / BACKUP_DIR
    stamp = now.strftime("%Y%m%dT%H%M%S%fZ")
    target = backups / stamp
    try:
        target.mkdir(parents=True, mode=0o700)
        with usage.held(home), tarfile.open(target / _SNAPSHOT, "w:gz") as tar:
            for entry in sorted(skills.iterdir()):
                if entry.name not in _NOT_BACKED_UP:
                    tar.add(entry, arcname=entry.name)
    except (OSError, tarfile.TarError) as exc:
        shutil.rmtree(target, ignore_errors=True)
        raise CurationError(f"the skills could not be backed up: {exc}") from exc
    for old in sorted(p for p in backups.iterdir() if p.is_dir() and not p.name.startswith("."))[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    return target


def restore(home: Path, backup: Path) -> None:
    """Put ``skills/`` back as ``backup`` holds it: what a failed run changed is undone.

    The backup is unpacked beside the skills first, so a failure leaves them as they were.

    Raises:
        CurationError: the backup could not be read or unpacked.
    """
    skills = _skills(home)
    staging = skills / BACKUP_DIR / f".restore-{backup.name}"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        with tarfile.open(backup / _SNAPSHOT) as tar:
            tar.extractall(staging, filter="data")
        with usage.held(home):
            for entry in skills.iterdir():
                if entry.name in _NOT_BACKED_UP:
                    continue
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry)
                else:
                    entry.unlink()
            for entry in staging.iterdir():
                os.rename(entry, skills / entry.name)
    except (OSError, tarfile.TarError) as exc:
        raise CurationError(f"the skills could not be restored from {backup}: {exc}") from exc
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def last_run(home: Path) -> datetime | None:
    """When the curator last ran for ``home`` (None: never, or its state file is damaged)."""
    try:
        state = json.loads((_skills(home) / _STATE_FILE).read_text(encoding="utf-8"))
        return datetime.fromisoformat(state["last_run_at"])
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        log.warning("the curator's state file could not be read (%s); it counts from now", exc)
        return None


def record_run(home: Path, at: datetime, summary: str) -> None:
    """Remember that the curator ran at ``at`` (the next scheduled run counts from it)."""
    state = {"last_run_at": at.isoformat(timespec="seconds"), "last_run_summary": summary}
    atomic_write(_skills(home) / _STATE_FILE, json.dumps(state, indent=1).encode("utf-8"), new_file_mode=0o600)
