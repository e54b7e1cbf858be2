"""WhatsApp's webhook, served on the daemon's HTTP API server (``platforms.api_server``) at
``webhook_path``; the bot (``platform/whatsapp``) reads what it takes in.

``GET``: Meta's subscription handshake. ``hub.mode=subscribe`` with ``hub.verify_token`` equal to the
configured verify token is answered with ``hub.challenge`` as plain text; anything else 403 (400 for a
missing challenge, 503 while no verify token is configured, so nobody can subscribe an unconfigured
daemon).

``POST``: an event. The raw body (at most 3 MiB, Meta's cap) must carry ``X-Hub-Signature-256:
sha256=<hex>``, the HMAC-SHA256 of those exact bytes keyed with the app secret (no secret configured:
503, as Hermes). A bad signature is 401 and a log line naming why; a body that is not a JSON object 400.
A good one is answered 200 at once and queued for the bot (Meta retries an event that is not answered
within seconds, for days); while the bot is not running, or its queue is full, the answer is 503 and Meta
delivers it again later. Meta may deliver one message more than once: the bot drops repeats by id.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from typing import Any

import attrs
import trio
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from actors.platform.api.body import read_body
from actors.platform.api.errors import BodyTooLarge
from messages.untrusted import UntrustedJsonError
from messages.untrusted import loads as loads_untrusted

__all__ = ["MAX_BODY_BYTES", "SIGNATURE_HEADER", "WebhookCounts", "WhatsAppWebhook", "signature"]

log = logging.getLogger("hermes_actors.whatsapp")

#: The header Meta signs each event in.
SIGNATURE_HEADER = "X-Hub-Signature-256"
#: The largest event body taken: Meta's documented cap.
MAX_BODY_BYTES = 3 * 1024 * 1024
#: Events taken and not yet read by the bot; past it, Meta is asked to deliver again later.
BACKLOG = 256


def signature(secret: str, body: bytes) -> str:
    """The ``X-Hub-Signature-256`` value of ``body`` under the app secret ``secret``."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


@attrs.define
class WebhookCounts:
    """What the webhook has seen, for ``status``."""

    events: int = 0
    bad_signatures: int = 0
    malformed: int = 0
    deferred: int = 0
    verified: int = 0


class WhatsAppWebhook:
    """The webhook's routes, and the queue between them and the bot. Built once by the daemon's wiring,
    shared by the API server (which serves :meth:`routes`) and the bot (which reads :meth:`next_event`).

    Args:
        path: the routes' path (``/whatsapp/webhook``).
        app_secret: the key of the events' signatures (None: no event is taken). A secret: never logged.
        verify_token: what Meta's handshake must present (None: no handshake succeeds). A secret too.
    """

    def __init__(self, path: str, app_secret: str | None, verify_token: str | None) -> None:
        self.path = path
        self._secret = app_secret
        self._verify_token = verify_token
        self._send, self._receive = trio.open_memory_channel[dict[str, Any]](BACKLOG)
        self.reader_attached = False
        self.counts = WebhookCounts()

    def routes(self) -> list[Route]:
        """The handshake (GET) and the events (POST), public: Meta signs instead of presenting a key."""
        return [Route(self.path, self._dispatch, methods=["GET", "POST"])]

    async def next_event(self) -> dict[str, Any]:
        """The next verified event's JSON (waits for one)."""
        return await self._receive.receive()

    async def _dispatch(self, request: Request) -> Response:
        try:
            return await (self._verify(request) if request.method == "GET" else self._event(request))
        except Exception as exc:  # an answer for Meta, never a crash of the API server
            log.error("whatsapp webhook: %s failed: %r", request.method, exc, exc_info=exc)
            return PlainTextResponse("internal error", status_code=500)

    async def _verify(self, request: Request) -> Response:
        query = request.query_params
        if not self._verify_token:
            log.error("whatsapp webhook: a subscription handshake, but no verify token is configured (WHATSAPP_CLOUD_VERIFY_TOKEN)")
            return PlainTextResponse("verify token not configured", status_code=503)
        if query.get("hub.mode") != "subscribe":
            return PlainTextResponse("not a subscription handshake", status_code=400)
        presented = query.get("hub.verify_token", "").encode()
        if not hmac.compare_digest(presented, self._verify_token.encode()):
            log.warning("whatsapp webhook: a subscription handshake with the wrong verify token; refused")
            return PlainTextResponse("wrong verify token", status_code=403)
        challenge = query.get("hub.challenge", "")
        if not challenge:
            return PlainTextResponse("no hub.challenge", status_code=400)
        self.counts.verified += 1
        log.info("whatsapp webhook: Meta's subscription handshake answered")
        return PlainTextResponse(challenge)

    async def _event(self, request: Request) -> Response:
        if not self._secret:
            log.error("whatsapp webhook: an event refused: no app secret is configured (WHATSAPP_CLOUD_APP_SECRET)")
            return PlainTextResponse("app secret not configured", status_code=503)
        try:
            body = await read_body(request, MAX_BODY_BYTES)
        except BodyTooLarge:
            self.counts.malformed += 1
            log.warning("whatsapp webhook: an event over %d bytes; refused", MAX_BODY_BYTES)
            return PlainTextResponse("too large", status_code=413)
        problem = self._signature_problem(request.headers.get(SIGNATURE_HEADER), body)
        if problem is not None:
            self.counts.bad_signatures += 1
            log.warning("whatsapp webhook: an event refused: %s (%d bytes)", problem, len(body))
            return PlainTextResponse("invalid signature", status_code=401)
        try:
            payload = loads_untrusted(body)
        except UntrustedJsonError:
            payload = None
        if not isinstance(payload, dict):
            self.counts.malformed += 1
            log.warning("whatsapp webhook: a signed event that is not a JSON object; refused")
            return PlainTextResponse("not a JSON object", status_code=400)
        if not self.reader_attached:
            self.counts.deferred += 1
            log.warning("whatsapp webhook: an event while the WhatsApp bot is not running; Meta will deliver it again")
            return PlainTextResponse("not ready", status_code=503)
        try:
            self._send.send_nowait(payload)
        except trio.WouldBlock:
            self.counts.deferred += 1
            log.warning("whatsapp webhook: %d events are waiting for the bot; Meta will deliver this one again", BACKLOG)
            return PlainTextResponse("busy", status_code=503)
        self.counts.events += 1
        return PlainTextResponse("ok")

    def _signature_problem(self, header: str | None, body: bytes) -> str | None:
        """Why ``header`` is not ``body``'s signature; None when it is."""
        assert self._secret is not None
        if not header:
            return f"no {SIGNATURE_HEADER} header"
        if not header.startswith("sha256="):
            return f"{SIGNATURE_HEADER} is not sha256=<hex>"
        if not hmac.compare_digest(header.strip().lower().encode(), signature(self._secret, body).encode()):
            return f"{SIGNATURE_HEADER} does not match the body (a wrong app secret, or not from Meta)"
        return None
