"""The ``hermes-actors skills curate`` request: a pass of the ``curator`` actor, answered when it is over."""

from __future__ import annotations

from typing import TYPE_CHECKING

from actors import ActorError, ActorNotFound
from actors.platform.curator import CURATOR, Curate
from control.errors import RequestFailed
from messages import control as c

if TYPE_CHECKING:
    from actors.platform.daemon.control.service import ControlService

__all__ = ["curate"]


async def curate(service: ControlService, request: c.CurateRequest) -> c.CurateReply:
    """Run a curator pass now (or a dry run) and report it.

    Raises:
        RequestFailed: ``unavailable``: this daemon runs no curator (a session host), or it is not running.
    """
    try:
        report = await service.system.lookup(CURATOR).ask(Curate(request.dry_run, request.consolidate))
    except ActorNotFound as exc:
        raise RequestFailed("unavailable", "this daemon runs no skills curator") from exc
    except ActorError as exc:
        raise RequestFailed("unavailable", f"the skills curator is not available: {exc}") from exc
    changes = [c.CuratorChange(change.action, change.subject, change.reason) for change in report.changes]
    return c.CurateReply(request.request_id, report.dry_run, changes, report.summary, report.backup, report.error)
