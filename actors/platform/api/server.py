"""The ``platform/api`` actor: the HTTP API served by hypercorn's Trio worker.

It binds in ``on_start`` (so a bad key or a taken port fails the start, and the
daemon says why), then serves until stopped; run tasks live in its nursery and
end with it. The daemon's wiring starts it under a ``platform`` supervisor
below the root.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx2
import trio
from hypercorn.config import Config as HypercornConfig
from hypercorn.trio import serve
from starlette.routing import BaseRoute

from actors import Actor
from actors.platform.api.app import build_app
from actors.platform.api.auth import Authenticator
from actors.platform.api.dashboard import DashboardDesk
from actors.platform.api.firsts import FirstTokens
from actors.platform.api.gateway import ApiGateway
from actors.platform.api.runs import RunRegistry
from actors.platform.api.webhooks import WebhookDesk
from actors.platform.daemon.control.service import ControlService
from actors.platform.gateway.transport import platform_client
from actors.session import SessionService
from config.api import ApiServerConfig
from config.webhook import WebhookConfig
from messages.supervision import ActorState

__all__ = ["ApiServer"]

log = logging.getLogger("hermes_actors.api")

#: How long hypercorn lets in-flight requests finish when the actor stops.
GRACEFUL_SECONDS = 1.0
#: The listening socket's backlog: connections the kernel holds until they are accepted. Hypercorn's
#: default of 100 reset connections under a burst: 1,000 clients connecting at once overflowed it, the
#: kernel answered with SYN cookies, and the cookies that came back while the queue was still full
#: failed and were answered with a reset, so 293 to 494 of the 1,000 got no HTTP answer at all (not
#: even the 429 the cap gives). The kernel caps this at ``net.core.somaxconn`` (4096 since Linux 5.4),
#: so asking for more means "as many as the system allows"; a queued connection costs nothing until
#: it is accepted, and then it is answered (200, or 429 over the cap).
LISTEN_BACKLOG = 65535


class ApiServer(Actor[None]):
    """Serves the OpenAI-compatible API over the daemon's sessions.

    Args:
        sessions: the daemon's session service.
        config: the ``platforms.api_server`` section.
        daemon_cap: ``daemon.max_running_turns``.
        models: the model ids ``/v1/models`` lists.
        environ: where ``API_SERVER_KEY`` and the webhooks' ``secret_env`` are looked up (the daemon's
            environment and ``.env``).
        webhooks: the ``platforms.webhook`` section (its routes are served when it is enabled).
        control: the daemon's control service; the web dashboard (``/dashboard``) is served over it
            when given and ``platforms.api_server.dashboard`` is on.
        platform_routes: messaging platforms' webhook routes (WhatsApp's), served without the API key.
        firsts: the order completions' work runs in, shared with the sessions' provider calls (a gate of
            its own when not given).
    """

    kind = "api"

    def __init__(
        self,
        sessions: SessionService,
        config: ApiServerConfig,
        daemon_cap: int,
        models: tuple[str, ...],
        environ: Mapping[str, str],
        *,
        webhooks: WebhookConfig | None = None,
        control: ControlService | None = None,
        platform_routes: Sequence[BaseRoute] = (),
        firsts: FirstTokens | None = None,
    ) -> None:
        super().__init__()
        self._control = control
        self._platform_routes = platform_routes
        self._webhooks = webhooks or WebhookConfig()
        self.webhooks: WebhookDesk | None = None
        self._client: httpx2.AsyncClient | None = None
        self._config = config
        self._environ = environ
        self._models = models
        self.gateway = ApiGateway(sessions, config, daemon_cap, config.cwd or str(Path.home()), firsts)
        self.runs: RunRegistry | None = None
        self.urls: list[str] = []
        self.dashboard: DashboardDesk | None = None

    def snapshot_details(self) -> dict[str, Any]:
        details: dict[str, Any] = {
            "urls": list(self.urls),
            "in_flight": self.gateway.in_flight,
            "runs": len(self.runs) if self.runs is not None else 0,
            "active_runs": self.runs.active() if self.runs is not None else 0,
            "webhooks": self.webhooks.snapshot() if self.webhooks is not None else {},
        }
        if self.dashboard is not None:
            details["dashboard_streams"] = self.dashboard.streams.open
        return details

    async def on_start(self) -> None:
        assert self._nursery is not None
        auth = Authenticator.from_config(self._config, self._environ)
        self.runs = RunRegistry(self.gateway, self.start_soon, self._config.max_stored_runs)
        if self._webhooks.enabled:
            self._client = platform_client()
            self.webhooks = WebhookDesk(
                self.gateway.sessions, self._webhooks, self._environ, self.gateway.cwd, self.start_soon, self._client
            )
        if self._control is not None and self._config.dashboard:
            self.dashboard = DashboardDesk(self._control, self.gateway)
        app = build_app(
            self.gateway, self.runs, auth, self._models, self._config, self.webhooks, self.dashboard, self._platform_routes
        )
        hc = HypercornConfig()
        host = self._config.host
        hc.bind = [f"[{host}]:{self._config.port}" if ":" in host else f"{host}:{self._config.port}"]
        hc.accesslog = None
        hc.errorlog = logging.getLogger("hermes_actors.api.hypercorn")
        hc.graceful_timeout = GRACEFUL_SECONDS
        hc.backlog = LISTEN_BACKLOG
        self.urls = await self._nursery.start(serve, app, hc)
        log.info("api: serving on %s (auth %s)", ", ".join(self.urls), "on" if auth.enabled else "DISABLED (loopback)")
        if self.dashboard is not None:
            log.info("api: the web dashboard is at %s/dashboard", self.urls[0] if self.urls else "")

    async def main(self) -> None:
        self.state = ActorState.RUNNING
        await trio.sleep_forever()

    async def on_stop(self) -> None:
        if self._client is not None:
            await self._client.aclose()

