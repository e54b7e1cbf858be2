"""Configuration section ``platforms.slack``: the Slack app front door (Socket Mode and the Web API).

Two tokens, as Hermes reads them: the bot token (``xoxb-``) from ``SLACK_BOT_TOKEN`` unless ``token`` is set
here, and the app-level token (``xapp-``, scope ``connections:write``) that opens Socket Mode, from
``SLACK_APP_TOKEN`` unless ``app_token`` is set here. A variable that is set wins; neither is ever logged.
Hermes's top-level ``slack:`` section is read here too (``config.hermes``).
"""

from __future__ import annotations

import attrs
from attrs import validators as v

from config.gateway import GatewaySection
from config.validators import integer, non_empty_str, optional_str

__all__ = ["APP_TOKEN_VARIABLE", "HOME_VARIABLE", "MAX_ATTACHMENT_BYTES", "TOKEN_VARIABLE", "SlackConfig"]

#: Where the tokens and the home channel come from (Hermes's names).
TOKEN_VARIABLE = "SLACK_BOT_TOKEN"
APP_TOKEN_VARIABLE = "SLACK_APP_TOKEN"
HOME_VARIABLE = "SLACK_HOME_CHANNEL"

#: The largest file of a user's that is fetched unless configured: 20 MiB, as Telegram's.
MAX_ATTACHMENT_BYTES = 20 * 1024 * 1024


@attrs.frozen
class SlackConfig(GatewaySection):
    """Section ``platforms.slack``: :class:`~config.gateway.GatewaySection`'s settings, and

    Attributes:
        app_token: the app-level token (``xapp-``) Socket Mode opens with; ``SLACK_APP_TOKEN`` wins.
            Never logged.
        home_channel: the channel a bare ``slack`` destination means: an id (``C0123ABCD``) or a name
            (``#general``); ``SLACK_HOME_CHANNEL`` wins.
        require_mention: as the shared one, on by default as in Hermes (``slack.require_mention``).
        reactions: mark a message being worked on with 👀, and with ✅ once answered (Hermes's key).
        max_attachment_bytes: the largest file a user may send that is fetched (0: no cap).
        api_url: the Web API's address (a test's fake server).
    """

    ENV_PREFIX = "SLACK"

    app_token: str | None = attrs.field(default=None, validator=optional_str, repr=False)
    # A Slack channel is named, not numbered: the shared section's int does not fit it.
    home_channel: str | None = attrs.field(default=None, validator=optional_str)  # type: ignore[assignment]
    require_mention: bool = attrs.field(default=True, validator=v.instance_of(bool))
    reactions: bool = attrs.field(default=True, validator=v.instance_of(bool))
    max_attachment_bytes: int = attrs.field(default=MAX_ATTACHMENT_BYTES, validator=integer(ge=0))
    api_url: str = attrs.field(default="https://slack.com/api", validator=non_empty_str)

    @property
    def max_file_bytes(self) -> int:
        """``max_attachment_bytes``."""
        return self.max_attachment_bytes
