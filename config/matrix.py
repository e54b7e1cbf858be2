"""Configuration section ``platforms.matrix``: the Matrix bot (the client-server API, sync long-poll).

As Hermes reads it: the homeserver from ``MATRIX_HOMESERVER`` unless ``homeserver`` is set here, the access
token from ``MATRIX_ACCESS_TOKEN`` unless ``token`` is, the bot's own user id from ``MATRIX_USER_ID``
unless ``user_id`` is (else the homeserver's ``whoami`` says it), the home room from ``MATRIX_HOME_ROOM``.
A variable that is set wins; the token is never logged. Hermes's top-level ``matrix:`` section is read
here too (``config.hermes``). End-to-end encrypted rooms are not served.
"""

from __future__ import annotations

import attrs
from attrs import validators as v

from config.gateway import GatewaySection
from config.validators import integer, optional_str

__all__ = ["HOME_VARIABLE", "HOMESERVER_VARIABLE", "MAX_MESSAGE_LENGTH", "TOKEN_VARIABLE", "USER_VARIABLE", "MatrixConfig"]

#: Where the homeserver, the token, the bot's user id and the home room come from (Hermes's names).
HOMESERVER_VARIABLE = "MATRIX_HOMESERVER"
TOKEN_VARIABLE = "MATRIX_ACCESS_TOKEN"
USER_VARIABLE = "MATRIX_USER_ID"
HOME_VARIABLE = "MATRIX_HOME_ROOM"

#: Hermes's default outbound piece length, in characters (an event may hold 65,536 bytes in all, and
#: the HTML form rides beside the plain one).
MAX_MESSAGE_LENGTH = 16_000


@attrs.frozen
class MatrixConfig(GatewaySection):
    """Section ``platforms.matrix``: :class:`~config.gateway.GatewaySection`'s settings, and

    Attributes:
        homeserver: the homeserver's address (``https://matrix.example.org``); ``MATRIX_HOMESERVER`` wins.
        user_id: the bot's Matrix id (``@hermes:example.org``); unset, ``whoami`` says it.
        home_channel: the room a bare ``matrix`` destination means: a room id (``!abc:example.org``) or an
            alias (``#ops:example.org``); ``MATRIX_HOME_ROOM`` wins.
        require_mention: as the shared one, on by default as in Hermes (``matrix.require_mention``).
        reactions: mark a message being worked on with 👀, and with ✅ once answered (Hermes's key).
        max_message_length: the longest piece an answer is split into, in characters (Hermes's key).
        sync_timeout_seconds: how long one ``/sync`` long-poll waits for news.
        retry_first_seconds: the first pause after a failed ``/sync`` (doubling to a minute while it fails).
        max_attachment_bytes: the largest file a user may send that is fetched (0: no cap).
    """

    ENV_PREFIX = "MATRIX"
    CHANNEL_WORD = "ROOMS"
    HERMES_NAMES = {"allowed_rooms": "allowed_channels", "free_response_rooms": "free_response_channels"}

    homeserver: str | None = attrs.field(default=None, validator=optional_str)
    user_id: str | None = attrs.field(default=None, validator=optional_str)
    # A Matrix room is named, not numbered: the shared section's int does not fit it.
    home_channel: str | None = attrs.field(default=None, validator=optional_str)  # type: ignore[assignment]
    require_mention: bool = attrs.field(default=True, validator=v.instance_of(bool))
    reactions: bool = attrs.field(default=True, validator=v.instance_of(bool))
    max_message_length: int = attrs.field(default=MAX_MESSAGE_LENGTH, validator=integer(ge=200, le=30_000))
    sync_timeout_seconds: float = attrs.field(default=30.0, converter=float, validator=v.and_(v.ge(0.0), v.le(300.0)))
    retry_first_seconds: float = attrs.field(default=1.0, converter=float, validator=v.and_(v.gt(0.0), v.le(60.0)))
    max_attachment_bytes: int = attrs.field(default=20 * 1024 * 1024, validator=integer(ge=0))

    @property
    def max_file_bytes(self) -> int:
        """``max_attachment_bytes``."""
        return self.max_attachment_bytes
