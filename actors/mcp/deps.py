"""What every server actor is given: where tools go, how processes start, and the timing policy."""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from tools.jail._spawner import Spawner
from tools.jail.runtime import DaemonJails
from tools.registry import ToolRegistry

__all__ = ["McpDeps"]


@attrs.frozen
class McpDeps:
    """Shared by the ``mcp`` supervisor's children.

    Attributes:
        registry: the daemon's tool registry (one toolset ``mcp-NAME`` per server).
        environ: the daemon's environment; a stdio server gets only its safe part.
        spawner: the long-lived thread stdio servers are forked from (their PDEATHSIG parent) where the
            daemon's launcher cannot jail; each ``mcp`` supervisor instance makes its own, since a
            closed thread cannot start again.
        jails: the daemon's jails: stdio servers start through their launcher (None: the spawner).
        backoff_initial / backoff_max: seconds before the first retry, doubling up to the max
            (Hermes reconnects the same way).
        stable_after: a connection up this long resets the backoff.
        ping_interval: seconds between health checks of an HTTP server.
    """

    registry: ToolRegistry
    environ: Mapping[str, str]
    spawner: Spawner = attrs.field(factory=lambda: Spawner("hermes-mcp-spawner"))
    jails: DaemonJails | None = None
    backoff_initial: float = 1.0
    backoff_max: float = 60.0
    stable_after: float = 60.0
    # An HTTP server gives no sign when it dies between calls: at 30 s between pings it stayed `ready`
    # in `status` for half a minute and more. A ping is one small request.
    ping_interval: float = 5.0
