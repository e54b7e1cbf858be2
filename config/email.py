"""Configuration section ``platforms.email``: the email front door (IMAP to read, SMTP to answer).

As Hermes reads it: the account from ``EMAIL_ADDRESS`` and ``EMAIL_PASSWORD``, the servers from
``EMAIL_IMAP_HOST`` / ``EMAIL_IMAP_PORT`` (993) and ``EMAIL_SMTP_HOST`` / ``EMAIL_SMTP_PORT`` (587), the
poll interval from ``EMAIL_POLL_INTERVAL`` (15 s), the senders let in from ``EMAIL_ALLOWED_USERS`` and the
home address from ``EMAIL_HOME_ADDRESS``. A variable that is set wins over its key; the password is
never logged. Hermes's ``address``, ``imap_host``, ``smtp_host`` and ``skip_attachments`` keys (its
``extra`` block) are read here under the same names.

Unlike the chat platforms, a stranger's mail is ignored (and logged) unless ``dm_policy`` says
otherwise: email is inbox-shaped, and answering every sender with a pairing code would answer spam
(Hermes decides the same).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
from attrs import validators as v

from config.gateway import GatewaySection, read_access_environment
from config.validators import integer, optional_str, str_tuple

__all__ = ["EmailConfig", "MAX_MESSAGE_BYTES", "SECURITY_MODES", "read_email_environment"]

#: How a connection is protected: TLS from the start, upgraded with STARTTLS, or plain (loopback tests only).
SECURITY_MODES = ("ssl", "starttls", "none")

#: The largest mail that is fetched unless configured (25 MiB, about what the big providers accept).
MAX_MESSAGE_BYTES = 25 * 1024 * 1024

#: Hermes's variable for each key (a variable that is set wins).
_VARIABLES = {
    "address": "EMAIL_ADDRESS", "password": "EMAIL_PASSWORD", "imap_host": "EMAIL_IMAP_HOST",
    "imap_port": "EMAIL_IMAP_PORT", "smtp_host": "EMAIL_SMTP_HOST", "smtp_port": "EMAIL_SMTP_PORT",
    "poll_interval": "EMAIL_POLL_INTERVAL", "home_channel": "EMAIL_HOME_ADDRESS",
}


def _addresses(value: Any) -> tuple[str, ...]:
    """Addresses compared case-insensitively: lowered once here (a comma-separated string as Hermes writes it)."""
    items = value.split(",") if isinstance(value, str) else list(value)
    return tuple(item.strip().lower() if isinstance(item, str) else item for item in items if not isinstance(item, str) or item.strip())


@attrs.frozen
class EmailConfig(GatewaySection):
    """Section ``platforms.email``: :class:`~config.gateway.GatewaySection`'s settings, and

    Attributes:
        address: the bot's own address (its IMAP and SMTP login, and the From of its mail).
        password: the account's password or app password; ``EMAIL_PASSWORD`` wins. Never logged.
        allow_from: sender addresses let in (``*``: everyone), compared without regard to case.
        home_channel: the address a bare ``email`` destination means; ``EMAIL_HOME_ADDRESS`` wins.
        imap_host, imap_port, imap_security: where mail is read: ``ssl`` (port 993), ``starttls`` or
            ``none`` (plain: loopback tests only).
        smtp_host, smtp_port, smtp_security: where answers are sent; unset security is ``ssl`` on port 465
            and ``starttls`` on any other, as Hermes decides.
        poll_interval: seconds between mailbox checks when the server has no IDLE.
        idle_seconds: how long one IDLE waits before it is renewed (servers drop one after 30 minutes).
        skip_attachments: ignore the attachments of incoming mail (Hermes's key).
        check_envelope: skip a mail whose envelope sender (``Return-Path``) is of another domain than its
            ``From`` (a forgery's mark, and a forwarder's); Hermes's ``EMAIL_TRUST_FROM_HEADER=true`` turns it off.
        max_attachment_bytes: the largest attachment that is fetched into the workspace (0: no cap).
        max_message_bytes: the largest mail that is read at all; a larger one is logged and skipped.
        retry_first_seconds: the first pause after a mail the SMTP server deferred (4xx), doubling to a minute.
        auth_retry_seconds: the pause between logins the server refused (logged once, retried slowly).
        tool_progress: off by default: a mail cannot be edited, so each progress line would be a mail.
    """

    ENV_PREFIX = "EMAIL"

    address: str | None = attrs.field(default=None, validator=optional_str)
    password: str | None = attrs.field(default=None, validator=optional_str, repr=False)
    allow_from: tuple[str, ...] = attrs.field(default=(), converter=_addresses, validator=str_tuple)
    # The home is an address: the shared section's int does not fit it.
    home_channel: str | None = attrs.field(default=None, validator=optional_str)  # type: ignore[assignment]
    imap_host: str | None = attrs.field(default=None, validator=optional_str)
    imap_port: int = attrs.field(default=993, converter=int, validator=integer(ge=1, le=65535))
    imap_security: str = attrs.field(default="ssl", validator=v.in_(SECURITY_MODES))
    smtp_host: str | None = attrs.field(default=None, validator=optional_str)
    smtp_port: int = attrs.field(default=587, converter=int, validator=integer(ge=1, le=65535))
    smtp_security: str | None = attrs.field(default=None, validator=v.optional(v.in_(SECURITY_MODES)))
    poll_interval: float = attrs.field(default=15.0, converter=float, validator=v.and_(v.gt(0.0), v.le(3600.0)))
    idle_seconds: float = attrs.field(default=1500.0, converter=float, validator=v.and_(v.gt(0.0), v.le(1740.0)))
    skip_attachments: bool = attrs.field(default=False, validator=v.instance_of(bool))
    check_envelope: bool = attrs.field(default=True, validator=v.instance_of(bool))
    max_attachment_bytes: int = attrs.field(default=20 * 1024 * 1024, validator=integer(ge=0))
    max_message_bytes: int = attrs.field(default=MAX_MESSAGE_BYTES, validator=integer(ge=1024))
    retry_first_seconds: float = attrs.field(default=1.0, converter=float, validator=v.and_(v.gt(0.0), v.le(60.0)))
    auth_retry_seconds: float = attrs.field(default=300.0, converter=float, validator=v.and_(v.gt(0.0), v.le(86400.0)))
    tool_progress: bool = attrs.field(default=False, validator=v.instance_of(bool))

    @property
    def effective_dm_policy(self) -> str:
        """``dm_policy``, or ``allowlist`` when unset: a stranger's mail is ignored and logged."""
        return self.dm_policy or "allowlist"

    @property
    def max_file_bytes(self) -> int:
        """``max_attachment_bytes``."""
        return self.max_attachment_bytes

    @property
    def smtp_mode(self) -> str:
        """``smtp_security``, or Hermes's rule when unset: ``ssl`` on port 465, else ``starttls``."""
        return self.smtp_security or ("ssl" if self.smtp_port == 465 else "starttls")

    def missing(self) -> list[str]:
        """What the bot cannot run without, as the variables that would set it."""
        return [_VARIABLES[key] for key in ("address", "password", "imap_host", "smtp_host") if not getattr(self, key)]


def read_email_environment(section: EmailConfig, environ: Mapping[str, str]) -> EmailConfig:
    """``section`` with Hermes's ``EMAIL_*`` variables applied (each one set wins over its key;
    ``EMAIL_TRUST_FROM_HEADER=true`` turns ``check_envelope`` off) and the access variables every platform
    has (``EMAIL_ALLOWED_USERS`` ...)."""
    changes: dict[str, Any] = {key: environ[variable].strip() for key, variable in _VARIABLES.items() if environ.get(variable, "").strip()}
    if environ.get("EMAIL_TRUST_FROM_HEADER", "").strip().lower() in ("true", "1", "yes"):
        changes["check_envelope"] = False
    section = attrs.evolve(section, **changes) if changes else section
    # The shared reader's numeric <P>_HOME_CHANNEL does not apply: a home here is an address.
    return read_access_environment(section, {name: value for name, value in environ.items() if name != "EMAIL_HOME_CHANNEL"})
