"""The control request about a session's checkpoints: list, diff, restore (``hermes-actors checkpoints``,
attach's ``/rollback``), on the working directory the session was created in (its row in the store)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from actors.session import (
    CheckpointOutcome,
    CheckpointsOff,
    RestoreWhileBusy,
    serve_checkpoints,
)
from actors.platform.daemon.control.record_commands import store_errors
from control.errors import RequestFailed
from messages import control as c
from tools.checkpoints import Checkpoint, CheckpointError, CheckpointNotFound, CheckpointSkipped

if TYPE_CHECKING:
    from actors.platform.daemon.control.service import ControlService

__all__ = ["DIFF_CAP_BYTES", "checkpoint_request"]

log = logging.getLogger("hermes_actors.checkpoints")

#: The longest diff a reply carries (the rest is cut, and the reply says so).
DIFF_CAP_BYTES = 256 * 1024


def _view(checkpoint: Checkpoint) -> c.CheckpointView:
    return c.CheckpointView(checkpoint.number, checkpoint.commit, checkpoint.taken_at, checkpoint.reason, checkpoint.files_changed)


async def checkpoint_request(service: ControlService, request: c.CheckpointRequest) -> c.CheckpointReply:
    """Serve one checkpoint verb of the control socket.

    Raises:
        RequestFailed: ``unavailable`` (checkpoints are off), ``invalid`` (an unknown action, a number below 1,
            a directory that is not snapshotted), ``not_found`` (no such session or checkpoint), ``busy`` (a
            restore while the session runs a turn), ``internal`` (git failed).
    """
    if service.sessions is None:
        raise RequestFailed("unavailable", "this daemon runs no sessions")
    session_id = await service.session_id_for(request.session_id)
    with store_errors():
        workdir = (await service.require_store().get_session(session_id)).cwd
    if workdir is None:
        raise RequestFailed("invalid", f"session {session_id} has no working directory")
    try:
        outcome = await serve_checkpoints(
            service.sessions, session_id, workdir, request.action, request.number, DIFF_CAP_BYTES
        )
    except CheckpointsOff as exc:
        raise RequestFailed("unavailable", str(exc)) from exc
    except RestoreWhileBusy as exc:
        raise RequestFailed("busy", str(exc)) from exc
    except CheckpointNotFound as exc:
        raise RequestFailed("not_found", str(exc)) from exc
    except (CheckpointSkipped, ValueError) as exc:
        raise RequestFailed("invalid", str(exc)) from exc
    except CheckpointError as exc:
        log.warning("session %s: checkpoints of %s: %s", session_id, workdir, exc)
        raise RequestFailed("internal", f"checkpoints of {workdir}: {exc}") from exc
    return _reply(request.request_id, outcome)


def _reply(request_id: str, outcome: CheckpointOutcome) -> c.CheckpointReply:
    diff, restored = outcome.diff, outcome.restored
    target = diff.checkpoint if diff else restored.checkpoint if restored else None
    return c.CheckpointReply(
        request_id, outcome.workdir, [_view(found) for found in outcome.checkpoints],
        diff=diff.text if diff else "", truncated=diff.truncated if diff else False,
        target=_view(target) if target else None, undo=_view(restored.undo) if restored else None,
    )
