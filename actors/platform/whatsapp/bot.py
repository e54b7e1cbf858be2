"""``platform/whatsapp``: the WhatsApp bot (Meta's Cloud API), one session per user's number, through the
gateway's desk.

Messages: none of its own (it is driven by the webhook's events). State: the Graph client with its
rate-limit book, the webhook it reads (served by the API server), the desk and counters. Loop: check the
token (``GET /{phone-number-id}``: code 190 stops the bot, named in ``status``), then read the webhook's
events; each user's message goes to the desk, a pressed button or a numbered reply answers the
question asked in that chat. A message Meta delivers again (it retries an event for days) is dropped by
its id.

The bot is the gateway's :class:`~actors.platform.gateway.port.ChatPort` for WhatsApp: Markdown in
WhatsApp's own marks, split at 4,096 characters. A question goes as reply buttons (up to three, titles
cut to 20 characters) or a list (up to ten rows: an approval's four choices), and may be answered by
its number or words too. The Cloud API cannot edit a sent message, so edits are dropped (``tool_progress``
is off by default). Files go up to ``/media`` and are sent by their id; a user's are fetched by theirs.
A message the 24-hour customer-service window refuses (code 131047) is named in the error and the log,
and the configured template (``window_template``) is sent instead, so the user can answer and reopen
it. While connected it is the registry's ``whatsapp`` platform (``whatsapp:PHONE``).
"""

from __future__ import annotations

import logging
import mimetypes
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import trio

from actors import ActorHandle
from actors.platform.gateway.adapter import PlatformAdapter
from actors.platform.gateway.desk import session_id_for
from actors.platform.gateway.port import ButtonPress, ChatRef, Choice, RemoteFile, SentMessage, file_kind
from actors.platform.gateway.recent import Recent
from actors.platform.gateway.replies import Question, chosen
from actors.platform.gateway.transport import SafeRetryTransport, platform_client
from actors.platform.outbound import DeliveryFailed, Destination, OutboundRegistry, UnknownDestination
from actors.platform.whatsapp.events import Received, read_event
from actors.platform.whatsapp.graph import GraphClient, GraphError, GraphTokenRefused, WindowClosed
from actors.platform.whatsapp.webhook import WhatsAppWebhook
from actors.session import SessionService
from config.whatsapp import WhatsAppConfig
from markup import WHATSAPP_LIMIT, whatsapp_chunks
from messages.supervision import ActorState

__all__ = ["WHATSAPP_SOURCE", "WHATSAPP_TOOLSETS", "WhatsAppBot", "whatsapp_session_id"]

WHATSAPP_SOURCE = "whatsapp"
WHATSAPP_TOOLSETS = ("hermes-whatsapp",)
SESSION_PREFIX = "wa"
log = logging.getLogger("hermes_actors.whatsapp")
#: What the model reads after a message cut at WhatsApp's limit.
OVERSIZED_NOTE = f"\n\n[The message was longer than WhatsApp's {WHATSAPP_LIMIT:,} characters and was cut here.]"
#: WhatsApp's caps on an interactive message: its body, a reply button's title, a list row's title and
#: description, the list's button, its footer; and the number of buttons and of rows.
BODY_CHARS, BUTTON_CHARS, ROW_CHARS, DESCRIPTION_CHARS = 1024, 20, 24, 72
MAX_BUTTONS, MAX_ROWS = 3, 10
#: The Cloud API's caps on media sent, per kind (bytes).
MEDIA_CAPS = {"image": 5 * 1024 * 1024, "audio": 16 * 1024 * 1024, "video": 16 * 1024 * 1024, "document": 100 * 1024 * 1024}


def whatsapp_session_id(phone: str) -> str:
    """The first session of a WhatsApp user's chat: stable across restarts."""
    return session_id_for(SESSION_PREFIX, phone)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


class WhatsAppBot(PlatformAdapter):
    """The bot; see the module's docstring.

    Args:
        config: ``platforms.whatsapp_cloud`` (its ``phone_number_id`` set).
        token: the Graph access token (a secret: never logged).
        webhook: the webhook the API server serves, whose events the bot reads.
        sessions: the daemon's session service.
        outbound: where the bot registers while connected.
        state_dir: where the conversations' current sessions are kept.
        pairing: the ``pairing`` actor's handle (None: only ``allow_from``).
    """

    kind = "whatsapp"
    platform = WHATSAPP_SOURCE

    def __init__(
        self,
        config: WhatsAppConfig,
        token: str,
        webhook: WhatsAppWebhook,
        sessions: SessionService,
        outbound: OutboundRegistry,
        state_dir: Path,
        pairing: Callable[[], ActorHandle[Any] | None] = lambda: None,
    ) -> None:
        super().__init__(config, sessions, outbound, state_dir, pairing, prefix=SESSION_PREFIX, toolsets=WHATSAPP_TOOLSETS)
        self.config = config
        self._token = token
        self.webhook = webhook
        self.graph: GraphClient | None = None
        # Graph's requests, each made again up to send_attempts times when it surely never reached Graph.
        self.sender = SafeRetryTransport(attempts=config.send_attempts, first_pause=config.retry_first_seconds)
        self.number = ""
        self.duplicates = self.skipped = self.edits_dropped = self.window_refusals = self.templates_sent = 0
        self.delivery_failures = 0
        self._seen = Recent()  # message ids handled (Meta delivers an event again when unsure it was taken)
        self._latest = Recent()  # chat id -> the user's latest message id (read receipts, typing)
        self._questions = Recent()  # ChatRef -> the Question asked there, until answered

    def snapshot_details(self) -> dict[str, Any]:
        graph = self.graph
        return {
            **self.connection_details(), "number": self.number, "webhook_path": self.webhook.path,
            **attrs.asdict(self.webhook.counts), "duplicates": self.duplicates, "skipped": self.skipped,
            "edits_dropped": self.edits_dropped, "window_refusals": self.window_refusals,
            "templates_sent": self.templates_sent, "delivery_failures": self.delivery_failures,
            "rate_limited": graph.pause.rate_limited if graph is not None else 0,
            "rate_limited_seconds": round(graph.pause.waited, 3) if graph is not None else 0.0,
            "network_retries": self.sender.retried,
        }

    async def main(self) -> None:
        self.state = ActorState.RUNNING
        await self.desk.load()
        async with platform_client(self.sender) as http:
            self.graph = GraphClient(
                self.config.graph_url, self.config.api_version, self._token, http, retry_first=self.config.retry_first_seconds,
            )
            try:
                await self.keep_connected(self._connect)
            finally:
                self.webhook.reader_attached = False

    async def _connect(self) -> None:
        number = await self._graph().request("GET", f"{self.config.phone_number_id}?fields=display_phone_number,verified_name", what="phone number")
        self.number = str(number.get("display_phone_number") or "") if isinstance(number, dict) else ""
        self.webhook.reader_attached = True
        self.up()
        log.info("whatsapp: number %s ready; webhook at %s on the API server", self.number or self.config.phone_number_id, self.webhook.path)
        while True:
            await self._event(await self.webhook.next_event())

    # -- what Meta sends --------------------------------------------------------------------------

    async def _event(self, payload: dict[str, Any]) -> None:
        event = read_event(payload, str(self.config.phone_number_id))
        if event.skipped:
            self.skipped += event.skipped
            log.warning("whatsapp: skipped %d part(s) of an event not as Meta documents it", event.skipped)
        if event.other_numbers:
            log.info("whatsapp: an event for another business number (not %s); ignored", self.config.phone_number_id)
        for failure in event.failures:
            self.delivery_failures += 1
            why = " (outside the 24-hour customer-service window)" if failure.code == 131047 else ""
            log.warning("whatsapp: Meta could not deliver message %s to %s: graph error %s: %s%s",
                        failure.message_id, failure.recipient, failure.code, failure.title, why)
        for received in event.received:
            if received.message_id in self._seen:
                self.duplicates += 1
                log.info("whatsapp: message %s delivered again by Meta; taken once", received.message_id)
                continue
            self._seen.remember(received.message_id)
            await self._take(received)

    async def _take(self, received: Received) -> None:
        incoming = received.incoming
        chat = incoming.chat
        self._latest.remember(chat.chat_id, received.message_id)
        question = self._questions.get(chat)
        if received.pressed is not None:
            self._questions.pop(chat, None)
            self.desk.spawn(self._press, ButtonPress(chat, incoming.user_id, received.pressed))
            return
        index = chosen(incoming.text, question) if question is not None else None
        if question is not None and index is not None:
            self._questions.pop(chat, None)
            self.desk.spawn(self._press, ButtonPress(chat, incoming.user_id, question.choices[index].data))
            return
        if len(incoming.text) > WHATSAPP_LIMIT:
            log.warning("whatsapp chat %s: a message of %d characters, over WhatsApp's %d; cut", chat.chat_id, len(incoming.text), WHATSAPP_LIMIT)
            incoming = attrs.evolve(incoming, text=incoming.text[:WHATSAPP_LIMIT] + OVERSIZED_NOTE)
        await self.desk.take(incoming)

    async def _press(self, press: ButtonPress) -> None:
        notice = await self.desk.press(press)
        try:
            await self._send(press.chat, {"type": "text", "text": {"body": notice}})
        except DeliveryFailed as exc:
            log.info("whatsapp: a notice was not shown: %s", exc)

    def _graph(self) -> GraphClient:
        if self.graph is None:
            raise GraphError("send", "the bot is not connected yet")
        return self.graph

    # -- the gateway's port -----------------------------------------------------------------------

    async def send_text(self, chat: ChatRef, text: str, *, markdown: bool) -> SentMessage:
        """See :meth:`ChatPort.send_text`: in WhatsApp's marks when ``markdown``, split at 4,096 characters."""
        pieces = whatsapp_chunks(text) if markdown else [text[i : i + WHATSAPP_LIMIT] for i in range(0, len(text), WHATSAPP_LIMIT)]
        sent = None
        for piece in pieces or ["(no answer)"]:
            sent = await self._send(chat, {"type": "text", "text": {"body": piece, "preview_url": False}})
        assert sent is not None
        return sent

    async def send_choices(self, chat: ChatRef, text: str, choices: list[Choice]) -> SentMessage:
        """See :meth:`ChatPort.send_choices`: reply buttons for up to three choices, a list for up to ten,
        numbered lines past that; any of them answered by a choice's number or words too."""
        question = Question("", tuple(choices))
        if len(text) > BODY_CHARS or len(choices) > MAX_ROWS:
            lines = [f"{n}. {choice.label}" for n, choice in enumerate(choices, 1)]
            how = "Reply *approve*, *approve session*, *approve always* or *deny*." if question.approval else "Reply with the number of your choice."
            body = "\n".join([text, "", *lines, "", how]) if len(choices) > MAX_ROWS else text
            sent = await self.send_text(chat, body, markdown=False)
            if len(choices) > MAX_ROWS:
                self._questions.remember(chat, attrs.evolve(question, message_id=sent.message_id))
                return sent
            text = "Your answer:"
        self._questions.remember(chat, question)
        try:
            sent = await self._send(chat, {"type": "interactive", "interactive": self._interactive(text, choices)})
        except DeliveryFailed:
            self._questions.pop(chat, None)
            raise
        if self._questions.get(chat) is question:
            self._questions.remember(chat, attrs.evolve(question, message_id=sent.message_id))
        return sent

    @staticmethod
    def _interactive(text: str, choices: list[Choice]) -> dict[str, Any]:
        """An interactive message's part: reply buttons, or a list when more than three choices."""
        if len(choices) <= MAX_BUTTONS:
            buttons = [{"type": "reply", "reply": {"id": c.data, "title": _cut(c.label, BUTTON_CHARS)}} for c in choices]
            return {"type": "button", "body": {"text": text}, "action": {"buttons": buttons}}
        rows = []
        for choice in choices:
            row = {"id": choice.data, "title": _cut(choice.label, ROW_CHARS)}
            if len(choice.label) > ROW_CHARS:
                row["description"] = _cut(choice.label, DESCRIPTION_CHARS)
            rows.append(row)
        return {"type": "list", "body": {"text": text}, "footer": {"text": "Or reply with the number"},
                "action": {"button": "Choose", "sections": [{"title": "Choices", "rows": rows}]}}

    async def edit_text(self, message: SentMessage, text: str) -> None:
        """See :meth:`ChatPort.edit_text`: the Cloud API cannot edit a sent message, so the edit is
        dropped; a question edited (answered elsewhere) takes no more answers."""
        question = self._questions.get(message.chat)
        if question is not None and question.message_id == message.message_id:
            del self._questions[message.chat]
        self.edits_dropped += 1

    async def send_file(self, chat: ChatRef, path: Path) -> None:
        """See :meth:`ChatPort.send_file`: upload to ``/media``, then a message of the file's kind by its id."""
        data = await trio.to_thread.run_sync(path.read_bytes)
        mime = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        kind = file_kind(mime)
        if kind == "audio" and mime not in ("audio/aac", "audio/amr", "audio/mpeg", "audio/mp4", "audio/ogg"):
            kind = "document"
        if len(data) > MEDIA_CAPS[kind]:
            raise GraphError("media", f"{path.name} is {len(data):,} bytes, over the Cloud API's {MEDIA_CAPS[kind]:,} for {kind}")
        uploaded = await self._graph().request(
            "POST", f"{self.config.phone_number_id}/media", files={"file": (path.name, data, mime)},
            data={"messaging_product": "whatsapp", "type": mime}, what="media",
        )
        media_id = uploaded.get("id") if isinstance(uploaded, dict) else None
        if not isinstance(media_id, str):
            raise GraphError("media", "no media id in the answer")
        part: dict[str, Any] = {"id": media_id}
        if kind == "document":
            part["filename"] = path.name
        await self._send(chat, {"type": kind, kind: part})

    async def typing(self, chat: ChatRef) -> None:
        """See :meth:`ChatPort.typing`: the user's latest message marked read, with the typing indicator."""
        latest = self._latest.get(chat.chat_id)
        if latest is None:
            return
        body = {"messaging_product": "whatsapp", "status": "read", "message_id": latest, "typing_indicator": {"type": "text"}}
        try:
            await self._graph().request("POST", f"{self.config.phone_number_id}/messages", body, what="typing")
        except DeliveryFailed as exc:
            log.debug("whatsapp: the typing indicator was not sent: %s", exc)

    async def download(self, file: RemoteFile, destination: Path, limit: int) -> int:
        """See :meth:`ChatPort.download` (a WhatsApp media id: its address, then its bytes)."""
        size, _mime = await self._graph().download(file.file_id, destination, limit)
        return size

    async def _send(self, chat: ChatRef, message: dict[str, Any]) -> SentMessage:
        body = {"messaging_product": "whatsapp", "recipient_type": "individual", "to": chat.chat_id, **message}
        path = f"{self.config.phone_number_id}/messages"
        try:
            answer = await self._graph().request("POST", path, body, what="messages")
        except WindowClosed as exc:
            self.window_refusals += 1
            log.warning("whatsapp chat %s: %s", chat.chat_id, exc)
            await self._send_template(chat, path)
            raise
        except GraphTokenRefused as exc:
            self.down(str(exc))  # status names it; nothing is sent until the token is replaced and the bot restarted
            log.error("%s; the whatsapp bot sends nothing until the token is fixed", exc)
            raise
        messages = answer.get("messages") if isinstance(answer, dict) else None
        message_id = messages[0].get("id") if isinstance(messages, list) and messages and isinstance(messages[0], dict) else None
        if not isinstance(message_id, str):
            raise GraphError("messages", "no message id in the answer")
        self.sent += 1
        return SentMessage(chat, message_id)

    async def _send_template(self, chat: ChatRef, path: str) -> None:
        """The configured template, in place of a message outside the 24-hour window (none: nothing)."""
        name = self.config.window_template
        if not name:
            log.warning("whatsapp chat %s: no window_template is configured, so nothing reaches the user until they write", chat.chat_id)
            return
        template = {"name": name, "language": {"code": self.config.window_template_language}}
        body = {"messaging_product": "whatsapp", "to": chat.chat_id, "type": "template", "template": template}
        try:
            await self._graph().request("POST", path, body, what="template")
        except DeliveryFailed as exc:
            log.warning("whatsapp chat %s: the template %r was not sent either: %s", chat.chat_id, name, exc)
            return
        self.templates_sent += 1
        log.info("whatsapp chat %s: sent the template %r instead; the user's answer reopens the window", chat.chat_id, name)

    # -- deliveries -------------------------------------------------------------------------------

    async def destination_chat(self, destination: Destination) -> ChatRef:
        """See :meth:`PlatformAdapter.destination_chat`: a phone number (its digits, a leading + allowed)."""
        target = destination.chat or (str(self.config.home_channel) if self.config.home_channel else None)
        if not target:
            raise UnknownDestination("whatsapp has no home_channel configured; name a number (whatsapp:15551234567)")
        number = target.removeprefix("+")
        if not number.isdigit():
            raise UnknownDestination(f"a whatsapp chat is a phone number (digits), got {target!r}")
        return ChatRef(self.platform, number)
