"""Configuration section ``platforms.mattermost``: the Mattermost bot (the WebSocket events API and
the REST API v4).

As Hermes reads it: the server from ``MATTERMOST_URL`` unless ``url`` is set here, the bot's access token
from ``MATTERMOST_TOKEN`` unless ``token`` is, the home channel from ``MATTERMOST_HOME_CHANNEL``. A variable
that is set wins; the token is never logged. Hermes's top-level ``mattermost:`` section is read here too
(``config.hermes``).
"""

from __future__ import annotations

import attrs
from attrs import validators as v

from config.gateway import GatewaySection
from config.validators import integer, optional_str

__all__ = ["HOME_VARIABLE", "MAX_ATTACHMENT_BYTES", "TOKEN_VARIABLE", "URL_VARIABLE", "MattermostConfig"]

#: Where the server, the token and the home channel come from (Hermes's names).
URL_VARIABLE = "MATTERMOST_URL"
TOKEN_VARIABLE = "MATTERMOST_TOKEN"
HOME_VARIABLE = "MATTERMOST_HOME_CHANNEL"

#: The largest file of a user's that is fetched unless configured: 20 MiB, as Telegram's.
MAX_ATTACHMENT_BYTES = 20 * 1024 * 1024


@attrs.frozen
class MattermostConfig(GatewaySection):
    """Section ``platforms.mattermost``: :class:`~config.gateway.GatewaySection`'s settings, and

    Attributes:
        url: the server's address (``https://chat.example.org``); ``MATTERMOST_URL`` wins.
        home_channel: the channel id a bare ``mattermost`` destination means; ``MATTERMOST_HOME_CHANNEL`` wins.
        require_mention: as the shared one, on by default as in Hermes (``mattermost.require_mention``).
        reactions: mark a message being worked on with 👀, and with ✅ once answered.
        websocket_url: the events API's address when it is not the server's own ``/api/v4/websocket`` (a
            proxy's, or a test's fake).
        retry_first_seconds: the first pause after a dropped or refused WebSocket (doubling to a minute).
        max_attachment_bytes: the largest file a user may send that is fetched (0: no cap).
    """

    ENV_PREFIX = "MATTERMOST"

    url: str | None = attrs.field(default=None, validator=optional_str)
    # A Mattermost channel id is 26 letters and digits, not a number: the shared section's int does not fit it.
    home_channel: str | None = attrs.field(default=None, validator=optional_str)  # type: ignore[assignment]
    require_mention: bool = attrs.field(default=True, validator=v.instance_of(bool))
    reactions: bool = attrs.field(default=True, validator=v.instance_of(bool))
    websocket_url: str | None = attrs.field(default=None, validator=optional_str)
    retry_first_seconds: float = attrs.field(default=1.0, converter=float, validator=v.and_(v.gt(0.0), v.le(60.0)))
    max_attachment_bytes: int = attrs.field(default=MAX_ATTACHMENT_BYTES, validator=integer(ge=0))

    @property
    def max_file_bytes(self) -> int:
        """``max_attachment_bytes``."""
        return self.max_attachment_bytes
