"""The control request about a session's checkpoints: list, diff, restore (``hermes-actors checkpoints``,
attach's ``/rollback``, and the HTTP API's equivalent through :func:`serve_checkpoints`).

Served by the daemon, outside every jail, on the working directory the session was created in (its row
in the store), whether the session is live or not; a restore is refused while the session runs a turn.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from actors.session import checkpoint_limits
from actors.platform.daemon.control.record_commands import store_errors
from control.errors import RequestFailed
from messages import control as c
from messages.checkpoints import CHECKPOINT_ACTIONS
from tools.checkpoints import Checkpoint, CheckpointDiff, CheckpointError, CheckpointNotFound, CheckpointSkipped, Restored

if TYPE_CHECKING:
    from actors.platform.daemon.control.service import ControlService
    from actors.session import SessionService

__all__ = ["DIFF_CAP_BYTES", "checkpoint_request", "serve_checkpoints"]

log = logging.getLogger("hermes_actors.checkpoints")

#: The longest diff a reply carries (the rest is cut, and the reply says so).
DIFF_CAP_BYTES = 256 * 1024
_OFF = "checkpoints are off: set checkpoints.enabled: true in config.yaml (new sessions take them)"


def _view(checkpoint: Checkpoint) -> c.CheckpointView:
    return c.CheckpointView(checkpoint.number, checkpoint.commit, checkpoint.taken_at, checkpoint.reason, checkpoint.files_changed)


async def checkpoint_request(service: ControlService, request: c.CheckpointRequest) -> c.CheckpointReply:
    """Serve one checkpoint verb of the control socket.

    Raises:
        RequestFailed: as :func:`serve_checkpoints`, and ``not_found`` for an unknown session.
    """
    if service.sessions is None:
        raise RequestFailed("unavailable", "this daemon runs no sessions")
    session_id = await service.session_id_for(request.session_id)
    with store_errors():
        workdir = (await service.require_store().get_session(session_id)).cwd
    if workdir is None:
        raise RequestFailed("invalid", f"session {session_id} has no working directory")
    return await serve_checkpoints(service.sessions, session_id, workdir, request)


async def serve_checkpoints(
    sessions: SessionService, session_id: str, workdir: str, request: c.CheckpointRequest
) -> c.CheckpointReply:
    """List, diff or restore the checkpoints of ``workdir``, session ``session_id``'s working directory.

    Raises:
        RequestFailed: ``unavailable`` (checkpoints are off), ``invalid`` (an unknown action, a number below 1,
            a directory that is not snapshotted), ``not_found`` (no such checkpoint), ``busy`` (a restore while
            the session runs a turn), ``internal`` (git failed).
    """
    deps = sessions.deps
    checkpoints = deps.checkpoints
    if checkpoints is None or not deps.config.checkpoints.enabled:
        raise RequestFailed("unavailable", _OFF)
    if request.action not in CHECKPOINT_ACTIONS:
        raise RequestFailed("invalid", f"unknown checkpoints action {request.action!r}: {', '.join(CHECKPOINT_ACTIONS)}")
    if request.number < 1:
        raise RequestFailed("invalid", f"checkpoint numbers start at 1 (the newest), got {request.number}")
    limits = checkpoint_limits(deps.config.checkpoints)
    diff: CheckpointDiff | None = None
    restored: Restored | None = None
    try:
        if request.action == "diff":
            diff = await checkpoints.diff(workdir, request.number, limits, DIFF_CAP_BYTES)
        elif request.action == "restore":
            if await sessions.turn_running(session_id):
                raise RequestFailed("busy", f"session {session_id} is running a turn: interrupt it, then restore")
            restored = await checkpoints.restore(workdir, request.number, limits)
            log.info("session %s: %s restored to checkpoint %s (%s)", session_id, workdir, restored.checkpoint.short,
                     restored.checkpoint.reason)
        listed = await checkpoints.list(workdir, limits)
    except CheckpointNotFound as exc:
        raise RequestFailed("not_found", str(exc)) from exc
    except CheckpointSkipped as exc:
        raise RequestFailed("invalid", str(exc)) from exc
    except CheckpointError as exc:
        log.warning("session %s: checkpoints of %s: %s", session_id, workdir, exc)
        raise RequestFailed("internal", f"checkpoints of {workdir}: {exc}") from exc
    return c.CheckpointReply(
        request.request_id, workdir, [_view(found) for found in listed],
        diff=diff.text if diff else "", truncated=diff.truncated if diff else False,
        target=_view(diff.checkpoint) if diff else _view(restored.checkpoint) if restored else None,
        undo=_view(restored.undo) if restored else None,
    )
