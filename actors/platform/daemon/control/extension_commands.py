"""The control request about the daemon's plugins and hooks (``hermes-actors plugins list``, ``hooks list``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from control.errors import RequestFailed
from messages import control as c

if TYPE_CHECKING:
    from actors.platform.daemon.control.service import ControlService

__all__ = ["extensions"]


async def extensions(service: ControlService, request: c.Extensions) -> c.ExtensionsReply:
    """Every installed plugin's state as the daemon loaded it (with how each platform it added runs now, in
    its notes), and every hook it fires.

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
    running = {platform.name: platform for platform in service.platform_statuses()}
    plugins = [
        attrs.evolve(plugin, notes=[*plugin.notes, *(_platform_note(name, running.get(name)) for name in plugin.platforms)])
        if plugin.platforms else plugin
        for plugin in deps.plugins
    ]
    return c.ExtensionsReply(request.request_id, plugins, hooks)


def _platform_note(name: str, status: c.PlatformStatus | None) -> str:
    if status is None:
        return f"platform {name}: not running (platforms.{name}.enabled is not true)"
    return f"platform {name}: {status.connection}" + (f": {status.error}" if status.error else "")
