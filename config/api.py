"""Configuration section ``platforms``: the daemon's front doors beyond the control socket.

Only the HTTP API lives here today (``platforms.api_server``). Its key is read
from ``API_SERVER_KEY`` (the daemon's environment or ``HERMES_ACTORS_HOME/.env``)
unless ``key`` is set here; the environment wins so a key can rotate without
editing the file. Serving without a key (``auth_disabled``) is refused while a
tool's process could reach the API's loopback port (:func:`auth_disabled_refusal`).
"""

from __future__ import annotations

import attrs
from attrs import validators as v

from config.sandbox import SANDBOX_MODES, SandboxConfig, limit_overrides
from config.discord import DiscordConfig
from config.email import EmailConfig
from config.matrix import MatrixConfig
from config.mattermost import MattermostConfig
from config.plugin_platform import PluginPlatformConfig
from config.signal import SignalConfig
from config.whatsapp import WhatsAppConfig
from config.slack import SlackConfig
from config.telegram import TelegramConfig
from config.webhook import WebhookConfig
from config.validators import integer, non_empty_str, optional_str, positive_int, str_tuple

__all__ = ["KEY_VARIABLE", "MIN_KEY_LENGTH", "ApiServerConfig", "PlatformsConfig", "auth_disabled_refusal"]

#: The environment variable (or ``HERMES_ACTORS_HOME/.env`` line) holding the API's bearer key.
KEY_VARIABLE = "API_SERVER_KEY"
#: The shortest key the API accepts.
MIN_KEY_LENGTH = 16


@attrs.frozen
class ApiServerConfig:
    """Section ``platforms.api_server``: the OpenAI-compatible HTTP API.

    Attributes:
        enabled: start the API with the daemon.
        host / port: where it listens (loopback by default).
        key: the bearer key; ``API_SERVER_KEY`` overrides it. At least 16 characters.
        auth_disabled: serve without a key; allowed only on a loopback host, and only when no tool's
            process can reach that loopback (see :func:`auth_disabled_refusal`).
        max_concurrent_runs: completions and runs in flight at once; one more gets a 429.
        max_body_bytes: the largest request body accepted (413 beyond it).
        cors_origins: origins allowed to call from a browser (none: CORS off).
        cwd: the directory API sessions work in (None: the daemon user's home).
        max_stored_runs: finished runs kept for ``GET /v1/runs/{id}``; the oldest go first.
        sandbox: the sandbox mode of API sessions (None: ``sandbox.mode``); never wider than
            ``sandbox.max_mode``.
        limits: what API sessions may use, by the names of ``sandbox.limits`` (None: those); only lower
            values take effect.
        dashboard: serve the web dashboard under ``/dashboard`` (off by default: it shows and drives
            every session of the daemon, CLI ones too, to whoever holds the key).
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
    limits: dict[str, int] | None = attrs.field(default=None, validator=limit_overrides)
    dashboard: bool = attrs.field(default=False, validator=v.instance_of(bool))


@attrs.frozen
class PlatformsConfig:
    """Section ``platforms``: one subsection per front door; ``plugin_platforms`` holds the sections of the
    platforms plugins add (``platforms.NAME``, see ``config.plugin_platform``)."""

    api_server: ApiServerConfig = attrs.Factory(ApiServerConfig)
    telegram: TelegramConfig = attrs.Factory(TelegramConfig)
    discord: DiscordConfig = attrs.Factory(DiscordConfig)
    slack: SlackConfig = attrs.Factory(SlackConfig)
    matrix: MatrixConfig = attrs.Factory(MatrixConfig)
    webhook: WebhookConfig = attrs.Factory(WebhookConfig)
    mattermost: MattermostConfig = attrs.Factory(MattermostConfig)
    signal: SignalConfig = attrs.Factory(SignalConfig)
    email: EmailConfig = attrs.Factory(EmailConfig)
    whatsapp_cloud: WhatsAppConfig = attrs.Factory(WhatsAppConfig)
    plugin_platforms: dict[str, PluginPlatformConfig] = attrs.Factory(dict)

    @property
    def any_chat_enabled(self) -> bool:
        """Whether a messaging platform (a chat a ``send_message`` can reach) is enabled."""
        chats = (
            self.telegram, self.discord, self.slack, self.matrix, self.mattermost, self.signal, self.email, self.whatsapp_cloud,
            *self.plugin_platforms.values(),
        )
        return any(section.enabled for section in chats)


def auth_disabled_refusal(api: ApiServerConfig, sandbox: SandboxConfig) -> str | None:
    """Why the API may not serve without a key beside ``sandbox``; None when it may, or when it does not ask to.

    Without a key the API obeys whoever reaches its loopback port, and a tool's process can:
    a jail shares the host's network, loopback included, unless ``sandbox.network`` is false
    (then bwrap gives it a network namespace of its own, ``--unshare-net``), and a
    ``full-access`` session runs tools unjailed. Such a process could create a run over
    HTTP and approve its own dangerous commands, so the combination is refused outright.
    """
    if not (api.enabled and api.auth_disabled):
        return None
    reasons: list[str] = []
    if sandbox.network:
        reasons.append("sandbox.network is true, so jailed tools share the host's network")
    if sandbox.max_mode == "full-access":
        reasons.append("sandbox.max_mode allows full-access, whose sessions run tools unjailed")
    if not reasons:
        return None
    return (
        "platforms.api_server.auth_disabled: true is refused while a tool's process can reach this machine's"
        f" loopback, where the API would accept any request without a key ({'; '.join(reasons)})."
        f" Either set a key of at least {MIN_KEY_LENGTH} characters ({KEY_VARIABLE} in the daemon's environment or"
        " HERMES_ACTORS_HOME/.env, or platforms.api_server.key) and remove auth_disabled,"
        " or keep jails off the host's loopback: sandbox.network: false (each jail gets only a loopback of its"
        " own) and sandbox.max_mode: workspace-write or read-only (a full-access session always reaches loopback)."
    )
