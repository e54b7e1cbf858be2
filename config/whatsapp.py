"""Configuration section ``platforms.whatsapp_cloud``: WhatsApp through Meta's Cloud API (a webhook on the
daemon's HTTP API server for what users send, the Graph API for what the bot sends).

As Hermes reads it (its ``whatsapp_cloud`` platform, whose settings it keeps under ``extra``, read here
at the section's top level too): the phone number's id from ``WHATSAPP_CLOUD_PHONE_NUMBER_ID``, the
access token from ``WHATSAPP_CLOUD_ACCESS_TOKEN``, the app secret that signs webhooks from
``WHATSAPP_CLOUD_APP_SECRET``, the subscription's verify token from ``WHATSAPP_CLOUD_VERIFY_TOKEN``, the
Graph version from ``WHATSAPP_CLOUD_API_VERSION`` and the home chat from ``WHATSAPP_CLOUD_HOME_CHANNEL``.
A variable that is set wins; the three secrets are never logged. Hermes's webhook listens on a port of
its own (``webhook_host``, ``webhook_port``); here it is a route of the daemon's API server
(``platforms.api_server``), so those two keys are not read.
"""

from __future__ import annotations

import re

import attrs
from attrs import validators as v

from config.gateway import GatewaySection
from config.validators import integer, optional_str

__all__ = ["MAX_ATTACHMENT_BYTES", "VARIABLES", "WhatsAppConfig"]

#: Each key Hermes reads from a variable, and the variable (a variable that is set wins).
VARIABLES = {
    "phone_number_id": "WHATSAPP_CLOUD_PHONE_NUMBER_ID",
    "token": "WHATSAPP_CLOUD_ACCESS_TOKEN",
    "app_secret": "WHATSAPP_CLOUD_APP_SECRET",
    "verify_token": "WHATSAPP_CLOUD_VERIFY_TOKEN",
    "api_version": "WHATSAPP_CLOUD_API_VERSION",
    "webhook_path": "WHATSAPP_CLOUD_WEBHOOK_PATH",
    "home_channel": "WHATSAPP_CLOUD_HOME_CHANNEL",
}

#: The largest file of a user's that is fetched unless configured: 16 MiB, the Cloud API's cap on audio
#: and video (images are 5 MB, documents up to 100 MB).
MAX_ATTACHMENT_BYTES = 16 * 1024 * 1024

_PATH = re.compile(r"/[A-Za-z0-9/_.-]*")
_VERSION = re.compile(r"v\d+\.\d+")


@attrs.frozen
class WhatsAppConfig(GatewaySection):
    """Section ``platforms.whatsapp_cloud``: :class:`~config.gateway.GatewaySection`'s settings (``token`` is
    the Graph access token), and

    Attributes:
        phone_number_id: the business phone number's id, the Graph path the bot sends from.
        app_secret: the Meta app's secret, the key of each webhook's ``X-Hub-Signature-256``; without it no
            webhook is taken (Hermes's rule). Never logged.
        verify_token: the word Meta's subscription handshake must present (``hub.verify_token``). Never logged.
        app_id, waba_id: the app's and the business account's ids (Hermes's keys; kept for reference).
        webhook_path: where the webhook is served on the API server (Hermes's default ``/whatsapp/webhook``).
        api_version: the Graph API version in every address (``v20.0``).
        graph_url: the Graph API's address (a test's fake server).
        home_channel: the phone number (``wa_id``, digits) a bare ``whatsapp`` destination means.
        tool_progress: as the shared one, off by default: WhatsApp cannot edit a sent message.
        window_template: a message template (approved in Meta's manager) sent instead of a message the
            24-hour customer-service window refuses (Graph error 131047), so the user can answer and open
            the window again; None: the refusal is only reported.
        window_template_language: the template's language code.
        max_attachment_bytes: the largest file a user may send that is fetched (0: no cap).
        send_attempts: times a request is made when it surely never reached Graph (a connection reset before
            Graph took any of it); a send Graph may have acted on is never made again.
        retry_first_seconds: the first pause before a request is made again after a network failure, or after
            a rate limit that names no wait (doubling).
    """

    ENV_PREFIX = "WHATSAPP_CLOUD"

    phone_number_id: str | None = attrs.field(default=None, validator=optional_str)
    app_secret: str | None = attrs.field(default=None, validator=optional_str, repr=False)
    verify_token: str | None = attrs.field(default=None, validator=optional_str, repr=False)
    app_id: str | None = attrs.field(default=None, validator=optional_str)
    waba_id: str | None = attrs.field(default=None, validator=optional_str)
    webhook_path: str = attrs.field(default="/whatsapp/webhook", validator=v.matches_re(_PATH))
    api_version: str = attrs.field(default="v20.0", validator=v.matches_re(_VERSION))
    graph_url: str = attrs.field(default="https://graph.facebook.com", validator=v.instance_of(str))
    # A WhatsApp chat is the user's phone number as digits (its wa_id), not an int of the shared section's.
    home_channel: str | None = attrs.field(default=None, validator=optional_str)  # type: ignore[assignment]
    # WhatsApp's Cloud API has no groups: every chat is a direct message, so a mention is never needed.
    require_mention: bool = attrs.field(default=False, validator=v.instance_of(bool))
    # The Cloud API cannot edit a sent message, so a progress message would never move past its first line.
    tool_progress: bool = attrs.field(default=False, validator=v.instance_of(bool))
    window_template: str | None = attrs.field(default=None, validator=optional_str)
    window_template_language: str = attrs.field(default="en_US", validator=v.instance_of(str))
    max_attachment_bytes: int = attrs.field(default=MAX_ATTACHMENT_BYTES, validator=integer(ge=0))
    send_attempts: int = attrs.field(default=3, validator=integer(ge=1, le=10))
    retry_first_seconds: float = attrs.field(default=1.0, converter=float, validator=v.and_(v.gt(0.0), v.le(60.0)))

    @property
    def max_file_bytes(self) -> int:
        """``max_attachment_bytes``."""
        return self.max_attachment_bytes
