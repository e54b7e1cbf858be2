"""A session's checkpoints: before the first change a turn makes to its working directory (a ``write_file``
or ``patch``, a ``terminal`` command that asked for approval), one snapshot of it (``checkpoints.*``).

The snapshot is the daemon's (``tools.checkpoints``), taken outside the jail; a failure is logged and
the tool runs anyway, as in Hermes Agent: a checkpoint never stands between the model and its tool.
"""

from __future__ import annotations

import logging

import trio

from config.checkpoints import CheckpointsConfig
from tools.checkpoints import CheckpointError, CheckpointLimits, Checkpoints, CheckpointSkipped
from tools.redact import redact_secrets

__all__ = ["CHANGING_TOOLS", "SessionCheckpoints", "checkpoint_limits"]

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
