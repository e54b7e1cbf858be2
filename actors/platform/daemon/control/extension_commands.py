"""The control request about the daemon's plugins and hooks (``hermes-actors plugins list``, ``hooks list``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from control.errors import RequestFailed
from messages import control as c

if TYPE_CHECKING:
    from actors.platform.daemon.control.service import ControlService

__all__ = ["extensions"]


async def extensions(service: ControlService, request: c.Extensions) -> c.ExtensionsReply:
    """Every installed plugin's state as the daemon loaded it, and every hook it fires.

    Raises:
        RequestFailed: the daemon runs no sessions (``unavailable``).
    """
    sessions = service.sessions
    if sessions is None:
        raise RequestFailed("unavailable", "this daemon runs no sessions, so no plugins or hooks")
    deps = sessions.deps
    hooks = [
        c.HookStatus(
            hook.event, hook.label, hook.matcher.pattern if hook.matcher is not None else None, hook.timeout, hook.on_error
        )
        for hook in deps.hooks.hooks()
    ]
    return c.ExtensionsReply(request.request_id, list(deps.plugins), hooks)
