"""The WhatsApp front door (``platform/whatsapp``): Meta's Cloud API, its webhook served on the daemon's
HTTP API server and the Graph API spoken directly with the project's HTTP stack."""

from actors.platform.whatsapp.bot import WHATSAPP_SOURCE, WHATSAPP_TOOLSETS, WhatsAppBot, whatsapp_session_id
from actors.platform.whatsapp.webhook import WhatsAppWebhook

__all__ = ["WHATSAPP_SOURCE", "WHATSAPP_TOOLSETS", "WhatsAppBot", "WhatsAppWebhook", "whatsapp_session_id"]
