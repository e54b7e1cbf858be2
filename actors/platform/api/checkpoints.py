"""The HTTP API's checkpoints of a session's working directory, as ``hermes-actors checkpoints`` has them:
``GET /v1/sessions/{name}/checkpoints``, ``GET .../checkpoints/{n}/diff`` and
``POST .../checkpoints/{n}/restore``, for the API sessions a client names with ``X-Hermes-Session-Id``."""

from __future__ import annotations

import logging
from typing import Any

from actors.platform.api.errors import ApiError, BadRequest, Conflict, NotFound
from actors.platform.api.gateway import ApiGateway
from actors.session import CheckpointOutcome, CheckpointsOff, RestoreWhileBusy, serve_checkpoints
from tools.checkpoints import Checkpoint, CheckpointError, CheckpointNotFound, CheckpointSkipped

__all__ = ["DIFF_CAP_BYTES", "CheckpointsUnavailable", "session_checkpoints"]

log = logging.getLogger("hermes_actors.api")

#: The longest diff an answer carries (``truncated`` says when it was cut).
DIFF_CAP_BYTES = 256 * 1024


class CheckpointsUnavailable(ApiError):
    """Checkpoints are off (``checkpoints.enabled``)."""

    status = 503
    type = "server_error"


def _json(checkpoint: Checkpoint) -> dict[str, Any]:
    return {
        "number": checkpoint.number, "commit": checkpoint.commit, "taken_at": checkpoint.taken_at,
        "reason": checkpoint.reason, "files_changed": checkpoint.files_changed,
    }


async def session_checkpoints(gateway: ApiGateway, name: str, action: str, number: str = "1") -> dict[str, Any]:
    """List, diff or restore the checkpoints of API session ``name``; the answer's JSON.

    Raises:
        NotFound: no such API session, or no such checkpoint.
        BadRequest: ``number`` is not a whole number from 1, or the directory is not snapshotted.
        Conflict: a restore while the session runs a turn.
        CheckpointsUnavailable: checkpoints are off.
        ApiError: git failed (the log says how).
    """
    if not number.isdigit() or int(number) < 1:
        raise BadRequest(f"a checkpoint's number is a whole number from 1 (the newest), not {number!r}", param="number")
    info = await gateway.named_session(name)
    if info.cwd is None:
        raise BadRequest(f"session {name!r} has no working directory")
    try:
        outcome = await serve_checkpoints(gateway.sessions, info.id, info.cwd, action, int(number), DIFF_CAP_BYTES)
    except CheckpointsOff as exc:
        raise CheckpointsUnavailable(str(exc)) from exc
    except RestoreWhileBusy as exc:
        raise Conflict(f"session {name!r} is running a turn: stop it, then restore") from exc
    except CheckpointNotFound as exc:
        raise NotFound(str(exc)) from exc
    except CheckpointSkipped as exc:
        raise BadRequest(str(exc)) from exc
    except CheckpointError as exc:
        log.warning("api: checkpoints of session %s: %s", info.id, exc)
        raise ApiError("the checkpoints could not be read or restored; see the daemon's log") from exc
    return _answer(outcome)


def _answer(outcome: CheckpointOutcome) -> dict[str, Any]:
    answer: dict[str, Any] = {
        "object": "list", "workdir": outcome.workdir, "data": [_json(found) for found in outcome.checkpoints],
    }
    if outcome.diff is not None:
        answer.update(checkpoint=_json(outcome.diff.checkpoint), diff=outcome.diff.text, truncated=outcome.diff.truncated)
    if outcome.restored is not None:
        answer.update(checkpoint=_json(outcome.restored.checkpoint), undo=_json(outcome.restored.undo))
    return answer
