"""A session's checkpoints: before the first change a turn makes to its working directory (a ``write_file``
or ``patch``, a ``terminal`` command that asked for approval), one snapshot of it (``checkpoints.*``); and
what the front doors ask of them (:func:`serve_checkpoints`: list, diff, restore).

The snapshot is the daemon's (``tools.checkpoints``), taken outside the jail; a failure is logged and
the tool runs anyway, as in Hermes Agent: a checkpoint never stands between the model and its tool.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import attrs
import trio

from config.checkpoints import CheckpointsConfig
from messages.checkpoints import CHECKPOINT_ACTIONS
from tools.checkpoints import (
    Checkpoint,
    CheckpointDiff,
    CheckpointError,
    CheckpointLimits,
    Checkpoints,
    CheckpointSkipped,
    Restored,
)
from tools.redact import redact_secrets

if TYPE_CHECKING:
    from actors.session.service import SessionService

__all__ = [
    "CHANGING_TOOLS",
    "CheckpointOutcome",
    "CheckpointsOff",
    "RestoreWhileBusy",
    "SessionCheckpoints",
    "checkpoint_limits",
    "serve_checkpoints",
]

log = logging.getLogger("hermes_actors.checkpoints")

#: The tools that change files by themselves; a terminal command counts when it asked for approval.
CHANGING_TOOLS = frozenset({"write_file", "patch"})
_REASON_CHARS = 60
_MB = 1024 * 1024


def checkpoint_limits(config: CheckpointsConfig) -> CheckpointLimits:
    """The caps of ``checkpoints.*`` as the shadow repositories take them."""
    return CheckpointLimits(
        max_snapshots=config.max_snapshots,
        max_total_bytes=config.max_total_size_mb * _MB,
        max_file_bytes=config.max_file_size_mb * _MB,
    )


class SessionCheckpoints:
    """At most one snapshot per turn of the session's working directory.

    Args:
        checkpoints: the daemon's checkpoints, or None where there are none (no daemon).
        config: the session's ``checkpoints`` section.
        workdir: the session's working directory (the cwd it was created with).
        session_id: for the log.
    """

    def __init__(self, checkpoints: Checkpoints | None, config: CheckpointsConfig, workdir: str, session_id: str) -> None:
        self._checkpoints = checkpoints if config.enabled else None
        self._limits = checkpoint_limits(config)
        self._workdir = workdir
        self._session_id = session_id
        #: The turn running now (its number); set by the session as each turn starts.
        self.turn = 0
        self._taken_in: int | None = None
        # Calls of one turn run in parallel: the second waits for the first's snapshot, then changes files.
        self._lock = trio.Lock()

    @property
    def enabled(self) -> bool:
        """Whether snapshots are taken."""
        return self._checkpoints is not None

    @property
    def due(self) -> bool:
        """Whether :meth:`before_change` would snapshot now: snapshots are taken and this turn has none yet."""
        return self._checkpoints is not None and self._taken_in != self.turn

    async def before_change(self, tool: str, detail: str = "") -> None:
        """Snapshot the working directory unless this turn already did; never raises but Cancelled."""
        checkpoints = self._checkpoints
        if checkpoints is None:
            return
        async with self._lock:
            if self._taken_in == self.turn:
                return
            self._taken_in = self.turn
            reason = f"before {tool}: {redact_secrets(detail)[:_REASON_CHARS]}" if detail else f"before {tool}"
            try:
                taken = await checkpoints.snapshot(self._workdir, reason, self._limits)
            except CheckpointSkipped as exc:
                log.info("session %s: no checkpoint: %s", self._session_id, exc)
            except CheckpointError as exc:
                log.warning("session %s: checkpoint failed, the tool runs anyway: %s", self._session_id, exc)
            else:
                if taken is not None:
                    log.info("session %s: checkpoint %s of %s (%s)", self._session_id, taken.short, self._workdir, reason)


class CheckpointsOff(CheckpointError):
    """``checkpoints.enabled`` is false (or the daemon keeps none)."""


class RestoreWhileBusy(CheckpointError):
    """A restore asked while the session runs a turn (its tools could be writing)."""


@attrs.frozen
class CheckpointOutcome:
    """What a checkpoint request did.

    Attributes:
        workdir: the session's working directory.
        checkpoints: its checkpoints after the request, newest first.
        diff: what changed since the checkpoint asked for (action diff).
        restored: the restore done (action restore).
    """

    workdir: str
    checkpoints: list[Checkpoint]
    diff: CheckpointDiff | None = None
    restored: Restored | None = None


async def serve_checkpoints(
    sessions: SessionService, session_id: str, workdir: str, action: str, number: int, diff_cap: int
) -> CheckpointOutcome:
    """List, diff or restore the checkpoints of ``workdir``, session ``session_id``'s working directory,
    live or not (the daemon's work, outside every jail).

    Args:
        sessions: the sessions (their shared configuration and checkpoints, whether a turn runs).
        session_id: the session.
        workdir: its working directory (its row in the store).
        action: one of :data:`CHECKPOINT_ACTIONS`.
        number: the checkpoint (diff, restore), 1 the newest.
        diff_cap: the longest diff returned, in bytes.

    Raises:
        CheckpointsOff: ``checkpoints.enabled`` is false.
        ValueError: an unknown action, or a number below 1.
        RestoreWhileBusy: a restore while the session runs a turn.
        CheckpointNotFound: no such checkpoint.
        CheckpointSkipped: the directory is not snapshotted (too broad, too many files, gone).
        CheckpointError: git failed.
    """
    deps = sessions.deps
    checkpoints = deps.checkpoints
    if checkpoints is None or not deps.config.checkpoints.enabled:
        raise CheckpointsOff("checkpoints are off: set checkpoints.enabled: true in config.yaml (new sessions take them)")
    if action not in CHECKPOINT_ACTIONS:
        raise ValueError(f"unknown checkpoints action {action!r}: {', '.join(CHECKPOINT_ACTIONS)}")
    if number < 1:
        raise ValueError(f"checkpoint numbers start at 1 (the newest), got {number}")
    limits = checkpoint_limits(deps.config.checkpoints)
    diff = restored = None
    if action == "diff":
        diff = await checkpoints.diff(workdir, number, limits, diff_cap)
    elif action == "restore":
        if await sessions.turn_running(session_id):
            raise RestoreWhileBusy(f"session {session_id} is running a turn: interrupt it, then restore")
        restored = await checkpoints.restore(workdir, number, limits)
        log.info("session %s: %s restored to checkpoint %s (%s)", session_id, workdir, restored.checkpoint.short,
                 restored.checkpoint.reason)
    return CheckpointOutcome(workdir, await checkpoints.list(workdir, limits), diff, restored)
