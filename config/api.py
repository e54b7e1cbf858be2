"""Configuration section ``platforms``: the daemon's front doors beyond the control socket.

Only the HTTP API lives here today (``platforms.api_server``). Its key is read
from ``API_SERVER_KEY`` (the daemon's environment or ``HERMES_ACTORS_HOME/.env``)
unless ``key`` is set here; the environment wins so a key can rotate without
editing the file.
"""

from __future__ import annotations

import attrs
from attrs import validators as v

from config.sandbox import SANDBOX_MODES
from config.discord import DiscordConfig
from config.telegram import TelegramConfig
from config.validators import integer, non_empty_str, optional_str, positive_int, str_tuple

__all__ = ["ApiServerConfig", "PlatformsConfig"]


@attrs.frozen
class ApiServerConfig:
    """Section ``platforms.api_server``: the OpenAI-compatible HTTP API.

    Attributes:
        enabled: start the API with the daemon.
        host / port: where it listens (loopback by default).
        key: the bearer key; ``API_SERVER_KEY`` overrides it. At least 16 characters.
        auth_disabled: serve without a key; allowed only on a loopback host.
        max_concurrent_runs: completions and runs in flight at once; one more gets a 429.
        max_body_bytes: the largest request body accepted (413 beyond it).
        cors_origins: origins allowed to call from a browser (none: CORS off).
        cwd: the directory API sessions work in (None: the daemon user's home).
        max_stored_runs: finished runs kept for ``GET /v1/runs/{id}``; the oldest go first.
        sandbox: the sandbox mode of API sessions (None: ``sandbox.mode``); never wider than
            ``sandbox.max_mode``.
    """

    enabled: bool = attrs.field(default=False, validator=v.instance_of(bool))
    host: str = attrs.field(default="127.0.0.1", validator=non_empty_str)
    # Port 0 picks a free port (tests, several daemons on one machine).
    port: int = attrs.field(default=8642, validator=integer(ge=0, le=65535))
    key: str | None = attrs.field(default=None, validator=optional_str, repr=False)
    auth_disabled: bool = attrs.field(default=False, validator=v.instance_of(bool))
    max_concurrent_runs: int = attrs.field(default=10, validator=positive_int)
    max_body_bytes: int = attrs.field(default=4 * 1024 * 1024, validator=integer(ge=1024))
    cors_origins: tuple[str, ...] = attrs.field(
        default=(), converter=tuple, validator=str_tuple
    )
    cwd: str | None = attrs.field(default=None, validator=optional_str)
    max_stored_runs: int = attrs.field(default=1000, validator=positive_int)
    sandbox: str | None = attrs.field(default=None, validator=v.optional(v.in_(SANDBOX_MODES)))


@attrs.frozen
class PlatformsConfig:
    """Section ``platforms``: one subsection per front door."""

    api_server: ApiServerConfig = attrs.Factory(ApiServerConfig)
    telegram: TelegramConfig = attrs.Factory(TelegramConfig)
    discord: DiscordConfig = attrs.Factory(DiscordConfig)
