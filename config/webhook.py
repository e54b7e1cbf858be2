"""Configuration section ``platforms.webhook``: generic inbound webhooks on the HTTP API's server.

Hermes's name and keys: named routes under ``routes`` (Hermes nests them under ``extra``; here they are
one level up), each with its ``secret`` and its ``prompt`` template. A route's secret is better kept out of the file:
``secret_env`` names the variable (the daemon's environment or ``HERMES_ACTORS_HOME/.env``) that holds it,
and wins over ``secret``. Secrets are never logged.
"""

from __future__ import annotations

import attrs
from attrs import validators as v

from config.sandbox import SANDBOX_MODES
from config.validators import integer, optional_str, positive_int, positive_number, str_tuple

__all__ = ["APPROVAL_ANSWERS", "MIN_SECRET_LENGTH", "WebhookConfig", "WebhookRoute"]

#: What a route answers a command that needs approval with (nobody is there to ask).
APPROVAL_ANSWERS = ("deny", "approve")
#: The shortest secret a route accepts.
MIN_SECRET_LENGTH = 16


@attrs.frozen
class WebhookRoute:
    """One named hook, served at ``POST /v1/webhooks/<name>``.

    Attributes:
        enabled: serve it (a disabled route answers 404).
        secret / secret_env: the HMAC-SHA256 key; the variable named by ``secret_env`` wins. Never logged.
        prompt: the message sent to the session; ``{field}`` and ``{a.b}`` fill in the payload's values,
            ``{__raw__}`` the whole payload as JSON (empty: the payload as JSON).
        session_key: the payload field (``a.b`` for a nested one) naming the conversation; deliveries with
            the same value continue one session. None: each delivery starts its own.
        callback_url: where the answer is POSTed, signed as the hook's deliveries are. None: the caller
            waits for the answer in the response.
        toolsets: the session's toolsets (None: ``hermes-api``'s).
        sandbox: its sandbox mode (None: ``sandbox.mode``); never wider than ``sandbox.max_mode``.
        approvals: what a command needing approval gets, nobody being there to ask: ``deny`` (refused with
            a note to the model) or ``approve``.
    """

    enabled: bool = attrs.field(default=True, validator=v.instance_of(bool))
    secret: str | None = attrs.field(default=None, validator=optional_str, repr=False)
    secret_env: str | None = attrs.field(default=None, validator=optional_str)
    prompt: str = attrs.field(default="", validator=v.instance_of(str))
    session_key: str | None = attrs.field(default=None, validator=optional_str)
    callback_url: str | None = attrs.field(default=None, validator=optional_str)
    toolsets: tuple[str, ...] | None = attrs.field(
        default=None, converter=attrs.converters.optional(tuple), validator=v.optional(str_tuple)
    )
    sandbox: str | None = attrs.field(default=None, validator=v.optional(v.in_(SANDBOX_MODES)))
    approvals: str = attrs.field(default="deny", validator=v.in_(APPROVAL_ANSWERS))


@attrs.frozen
class WebhookConfig:
    """Section ``platforms.webhook`` (Hermes's name): inbound hooks on ``platforms.api_server``'s server.

    Attributes:
        enabled: serve the routes (the API server must be enabled too).
        routes: the hooks by name.
        rate_limit: deliveries a route accepts per minute (Hermes's 30); one more gets a 429.
        max_body_bytes: the largest payload (Hermes's 1 MiB); 413 beyond it.
        replay_window_seconds: how far ``X-Webhook-Timestamp`` may be from now (Hermes's 300 s).
        idempotency_seconds: how long a delivery id is remembered, so a retried delivery runs once.
        callback_attempts / callback_backoff_seconds: tries of a callback POST, the first wait between
            them (doubled after each failure).
        callback_timeout_seconds: one callback POST's limit.
        wait_seconds: the longest a turn is waited for, by a caller or for a callback.
    """

    enabled: bool = attrs.field(default=False, validator=v.instance_of(bool))
    routes: dict[str, WebhookRoute] = attrs.Factory(dict)
    rate_limit: int = attrs.field(default=30, validator=positive_int)
    max_body_bytes: int = attrs.field(default=1_048_576, validator=integer(ge=1))
    replay_window_seconds: int = attrs.field(default=300, validator=positive_int)
    idempotency_seconds: int = attrs.field(default=3600, validator=positive_int)
    callback_attempts: int = attrs.field(default=5, validator=positive_int)
    callback_backoff_seconds: float = attrs.field(default=1.0, validator=positive_number)
    callback_timeout_seconds: float = attrs.field(default=10.0, validator=positive_number)
    wait_seconds: float = attrs.field(default=300.0, validator=positive_number)
