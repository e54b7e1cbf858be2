"""Configuration section ``platforms.signal``: the Signal bot, through a ``signal-cli`` daemon's JSON-RPC
HTTP endpoint (``signal-cli -a +NUMBER daemon --http 127.0.0.1:8080``; signal-cli is not shipped with us).

As Hermes reads it: the daemon's address from ``SIGNAL_HTTP_URL`` unless ``http_url`` is set here, the bot's
account (its phone number) from ``SIGNAL_ACCOUNT`` unless ``account`` is, the home chat from
``SIGNAL_HOME_CHANNEL``; ``SIGNAL_ALLOWED_USERS`` lists the users let in and ``SIGNAL_GROUP_ALLOWED_USERS``,
in Hermes's sense, the groups (their ids, or ``*``). A variable that is set wins. Hermes's top-level
``signal:`` section is read here too (``config.hermes``).
"""

from __future__ import annotations

import attrs
from attrs import validators as v

from typing import Any

from config.gateway import GatewaySection
from config.validators import integer, non_empty_str, optional_str, str_tuple

__all__ = [
    "ACCOUNT_VARIABLE", "GROUPS_VARIABLE", "HOME_VARIABLE", "MAX_ATTACHMENT_BYTES", "REACTIONS_VARIABLE",
    "URL_VARIABLE", "SignalConfig",
]

#: Where the daemon's address, the account, the home chat, the groups and the reactions switch come from
#: (Hermes's names).
URL_VARIABLE = "SIGNAL_HTTP_URL"
ACCOUNT_VARIABLE = "SIGNAL_ACCOUNT"
HOME_VARIABLE = "SIGNAL_HOME_CHANNEL"
GROUPS_VARIABLE = "SIGNAL_GROUP_ALLOWED_USERS"
REACTIONS_VARIABLE = "SIGNAL_REACTIONS"

#: The largest attachment of a user's that is fetched unless configured: Hermes's 100 MiB.
MAX_ATTACHMENT_BYTES = 100 * 1024 * 1024


def _numbers(value: Any) -> Any:
    """User ids as Signal writes them: a phone number written in YAML without quotes reads as a number, its
    ``+`` lost, so an id of 7 to 15 digits gets it back (an account's uuid is left as it is)."""
    if not isinstance(value, (list, tuple)):
        return value
    return tuple(f"+{item}" if isinstance(item, str) and item.isdigit() and 7 <= len(item) <= 15 else item for item in value)


@attrs.frozen
class SignalConfig(GatewaySection):
    """Section ``platforms.signal``: :class:`~config.gateway.GatewaySection`'s settings (``token`` is not
    used: signal-cli holds the account's keys), and

    Attributes:
        allow_from: as the shared one; a number written without quotes (its ``+`` lost in YAML) is read
            with it. Likewise ``group_allow_from``.
        http_url: the signal-cli daemon's HTTP address; ``SIGNAL_HTTP_URL`` wins.
        account: the bot's Signal account, its phone number (``+15551234567``); ``SIGNAL_ACCOUNT`` wins.
        home_channel: the chat a bare ``signal`` destination means: a number, or ``group:GROUP_ID``;
            ``SIGNAL_HOME_CHANNEL`` wins.
        require_mention: as the shared one; off by default, as Hermes's ``SIGNAL_REQUIRE_MENTION``.
        reactions: mark a message being worked on with 👀, and with ✅ once answered (``SIGNAL_REACTIONS``).
        retry_first_seconds: the first pause after the event stream drops or cannot be opened (doubling to a
            minute).
        max_attachment_bytes: the largest attachment a user may send that is fetched (0: no cap).
    """

    ENV_PREFIX = "SIGNAL"

    allow_from: tuple[str, ...] = attrs.field(default=(), converter=_numbers, validator=str_tuple)
    group_allow_from: tuple[str, ...] = attrs.field(default=(), converter=_numbers, validator=str_tuple)
    http_url: str = attrs.field(default="http://127.0.0.1:8080", validator=non_empty_str)
    account: str | None = attrs.field(default=None, validator=optional_str)
    # A Signal chat is a phone number or a group's base64 id, not a number: the shared section's int does not fit.
    home_channel: str | None = attrs.field(default=None, validator=optional_str)  # type: ignore[assignment]
    require_mention: bool = attrs.field(default=False, validator=v.instance_of(bool))
    reactions: bool = attrs.field(default=True, validator=v.instance_of(bool))
    retry_first_seconds: float = attrs.field(default=2.0, converter=float, validator=v.and_(v.gt(0.0), v.le(60.0)))
    max_attachment_bytes: int = attrs.field(default=MAX_ATTACHMENT_BYTES, validator=integer(ge=0))

    @property
    def max_file_bytes(self) -> int:
        """``max_attachment_bytes``."""
        return self.max_attachment_bytes
