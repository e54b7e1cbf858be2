"""``platform/signal``: the Signal bot, one session per direct chat and per group, through the gateway's
desk, spoken through a ``signal-cli`` daemon's HTTP endpoint (signal-cli holds the account and its keys).

Messages: none of its own (it is driven by the event stream). State: the JSON-RPC client with its
rate-limit book, the last event id seen (so a stream that drops is resumed where it stopped; kept in
``state/signal-events.json`` at each user's message, so that after a restart the messages signal-cli took
meanwhile are answered too), the desk and counters. Loop: check the daemon (``GET /api/v1/check``), open ``GET /api/v1/events`` and read it; each
user's message goes to the desk, or answers the question the bot asked in that chat. A stream that drops
is opened again after a pause (doubling to a minute) with ``Last-Event-ID``, and signal-cli sends what it
kept since (all it kept, when it no longer knows the id: messages already handled are dropped by their
author and timestamp). A daemon that does not know the account stops the bot, named in ``status``.

The bot is the gateway's :class:`~actors.platform.gateway.port.ChatPort` for Signal: Markdown becomes
Signal's text styles (bold, italic, strikethrough, monospace, spoiler) and is split at 8,000 characters
(Hermes's limit); a group needs a mention of the bot, or a reply to it, when ``require_mention`` is on. When
signal-cli is linked to its owner's own number, the owner's Note to Self is a direct chat with the bot.
Signal has no buttons: approvals and clarify questions list their choices and are answered by a reply
(``approve``, ``deny``, a choice's number or words), which goes to the desk as a button press (the desk
decides who may answer). Edits (tool progress, an answered question) are Signal's message edits
(``send`` with ``editTimestamp``), paced, and at most :data:`MAX_EDITS` per message as Signal allows;
files go as attachments; a message being worked on gets a 👀 reaction, then ✅. While connected it is the
registry's ``signal`` platform (``signal:+15551234567``, ``signal:group:GROUP_ID``).
"""

from __future__ import annotations

import base64
import binascii
import functools
import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import httpx2
import trio

from actors import ActorHandle
from actors.platform.gateway.adapter import PlatformAdapter
from actors.platform.gateway.desk import session_id_for
from actors.platform.gateway.fetch import DownloadFailed
from actors.platform.gateway.pacing import EditPacer
from actors.platform.gateway.port import ButtonPress, ChatRef, Choice, RemoteFile, SentMessage
from actors.platform.gateway.recent import Recent
from actors.platform.gateway.replies import Question, ask, chosen, forget_edited
from actors.platform.gateway.transport import platform_client
from actors.platform.outbound import DeliveryFailed, Destination, OutboundRegistry, UnknownDestination
from actors.platform.signal.client import SignalAccountRefused, SignalClient, SignalError
from actors.platform.signal.events import GROUP, SseReader, read_envelope, well_formed
from actors.platform.state_files import read_json, write_json
from actors.session import SessionService
from config.signal import SignalConfig
from markup.signal import SIGNAL_LIMIT, StyledText, signal_chunks
from messages.supervision import ActorState
from messages.wire_shapes import wire_object

__all__ = ["MAX_EDITS", "SIGNAL_SOURCE", "SIGNAL_TOOLSETS", "SignalBot", "signal_chat", "signal_session_id"]

SIGNAL_SOURCE = "signal"
SIGNAL_TOOLSETS = ("hermes-signal",)
SESSION_PREFIX = "sg"
log = logging.getLogger("hermes_actors.signal")
WORKING, DONE = "👀", "✅"
#: Edits of one message the bot makes (Signal's apps take a handful per message).
MAX_EDITS = 5
#: Seconds between two edits of one message.
EDIT_EVERY = 3.0
#: Seconds the event stream may be silent before it is taken for dropped (signal-cli sends a keep-alive every 15).
STALE_AFTER = 60.0
#: What the model reads after a message cut at the limit.
OVERSIZED_NOTE = f"\n\n[The message was longer than {SIGNAL_LIMIT:,} characters and was cut here.]"
#: A chat a destination may name: a number, an account's uuid, or a group (``group:ID``, or ``group.ID``).
_NUMBER = re.compile(r"\+[1-9]\d{6,14}")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_GROUP = re.compile(r"group[:.](?P<id>[A-Za-z0-9+/=_-]{8,128})")


def signal_session_id(chat_id: str) -> str:
    """The first session of a Signal chat (a number, or ``group:ID``): stable across restarts."""
    return session_id_for(SESSION_PREFIX, chat_id)


def signal_chat(target: str) -> str | None:
    """A destination's chat as the bot names it (``+NUMBER``, a uuid, ``group:ID``); None when it is none."""
    if _NUMBER.fullmatch(target) or _UUID.fullmatch(target):
        return target
    group = _GROUP.fullmatch(target)
    return f"{GROUP}{group['id']}" if group is not None else None


class SignalBot(PlatformAdapter):
    """The bot; see the module's docstring.

    Args:
        config: ``platforms.signal`` (its ``account`` set).
        sessions: the daemon's session service.
        outbound: where the bot registers while connected.
        state_dir: where the conversations' current sessions are kept.
        pairing: the ``pairing`` actor's handle (None: only ``allow_from``).
    """

    kind = "signal"
    platform = SIGNAL_SOURCE

    def __init__(
        self,
        config: SignalConfig,
        sessions: SessionService,
        outbound: OutboundRegistry,
        state_dir: Path,
        pairing: Callable[[], ActorHandle[Any] | None] = lambda: None,
    ) -> None:
        super().__init__(config, sessions, outbound, state_dir, pairing, prefix=SESSION_PREFIX, toolsets=SIGNAL_TOOLSETS)
        self.config = config
        self.account = config.account or ""
        self.client: SignalClient | None = None
        self.pacer = EditPacer(self.desk.spawn, interval=EDIT_EVERY)
        self.last_event_id: str | None = None
        self.events_file = state_dir / "signal-events.json"
        self.streams = self.events = self.malformed = self.skipped = 0
        self._bot_ids = frozenset({self.account})
        self._seen = Recent()  # (author, timestamp) of messages handled: a resumed stream may send one again
        self._sent = Recent()  # timestamps of the bot's messages: a quote of one addresses the bot
        self._edits = Recent()  # timestamp -> edits made of that message
        self._questions = Recent()  # ChatRef -> the Question asked there, until answered
        self._working = Recent()  # ChatRef -> the (author, timestamp) of messages marked 👀

    def snapshot_details(self) -> dict[str, Any]:
        client = self.client
        return {
            **self.connection_details(), "account": self.account, "streams": self.streams, "events": self.events,
            "last_event_id": self.last_event_id, "malformed": self.malformed, "skipped": self.skipped,
            "edits_coalesced": self.pacer.coalesced,
            "rate_limited": client.rate_limited if client is not None else 0,
            "rate_limited_seconds": round(client.waited, 3) if client is not None else 0.0,
            "proof_required": client.proof_required if client is not None else 0,
        }

    async def main(self) -> None:
        self.state = ActorState.RUNNING
        await self.desk.load()
        saved = wire_object(await trio.to_thread.run_sync(read_json, self.events_file)).get("last_event_id")
        self.last_event_id = saved if isinstance(saved, str) and saved else None
        async with platform_client() as http:
            self.client = SignalClient(self.config.http_url, self.account, http)
            await self.keep_connected(lambda: self._connect(http))

    async def _connect(self, http: httpx2.AsyncClient) -> None:
        await self._client().check()
        wait = self.config.retry_first_seconds
        while True:
            try:
                await self._stream(http)
                wait = self.config.retry_first_seconds
                log.info("signal: the event stream ended; opening it again")
            except SignalAccountRefused:
                raise
            except SignalError as exc:
                log.warning("signal: %s; trying again in %.1f s", exc, wait)
                self.connection, self.connection_error = "reconnecting", str(exc)
                await trio.sleep(wait)
                wait = min(wait * 2, 60.0)
                await self._client().check()  # a daemon that is gone goes back to the adapter's back-off
                continue
            if self.connection == "connected":
                self.connection = "reconnecting"
            await trio.sleep(self.config.retry_first_seconds)  # a daemon that ends every stream at once is not hammered

    async def _stream(self, http: httpx2.AsyncClient) -> None:
        """One event stream, until it ends.

        Raises:
            SignalAccountRefused: the daemon does not know the account (HTTP 400).
            SignalError: it could not be opened, or failed while read.
        """
        headers = {"Accept": "text/event-stream"}
        if self.last_event_id:
            headers["Last-Event-ID"] = self.last_event_id
        url = f"{self._client().root}/api/v1/events"
        timeout = httpx2.Timeout(10.0, read=STALE_AFTER)
        try:
            async with http.stream("GET", url, params={"account": self.account}, headers=headers, timeout=timeout) as response:
                if response.status_code == 400:
                    raise SignalAccountRefused("events", f"signal-cli does not know the account {self.account} (register or link it there)")
                if response.status_code != 200:
                    raise SignalError("events", f"HTTP {response.status_code}")
                self.streams += 1
                self.up()
                reader = SseReader()
                async for line in response.aiter_lines():
                    event = reader.line(line)
                    if event is not None:
                        await self._event(event.id, event.event, event.data)
        except httpx2.HTTPError as exc:
            raise SignalError("events", f"the stream failed ({type(exc).__name__})") from None

    # -- what signal-cli sends ------------------------------------------------------------------

    async def _event(self, event_id: str | None, name: str, data: str) -> None:
        if event_id:
            self.last_event_id = event_id
        if name != "receive":
            return
        self.events += 1
        message = read_envelope(data, self.account, self._bot_ids)
        if message is None:
            self._skip(data)
            return
        if (message.author, message.timestamp) in self._seen or (message.note_to_self and message.timestamp in self._sent):
            return  # handled already, or the bot's own answer in Note to Self
        self._seen.remember((message.author, message.timestamp))
        if event_id:
            await trio.to_thread.run_sync(write_json, self.events_file, {"last_event_id": event_id})
        incoming = message.incoming
        if len(incoming.text) > SIGNAL_LIMIT:
            log.warning("signal chat %s: a message of %d characters, over %d; cut", incoming.chat.chat_id, len(incoming.text), SIGNAL_LIMIT)
            incoming = attrs.evolve(incoming, text=incoming.text[:SIGNAL_LIMIT] + OVERSIZED_NOTE)
        if not incoming.addressed and message.quote_id is not None and message.quote_id in self._sent:
            incoming = attrs.evolve(incoming, addressed=True)  # a reply to one of the bot's messages
        question = self._questions.get(incoming.chat)
        index = chosen(incoming.text, question) if question is not None else None
        if question is not None and index is not None and not incoming.files:
            self.desk.spawn(self._choose, incoming.chat, incoming.user_id, question, index)
            return
        before = (self.desk.refused, self.desk.ignored, self.desk.commands)
        await self.desk.take(incoming)
        taken = (self.desk.refused, self.desk.ignored, self.desk.commands) == before
        if taken and self.config.reactions:
            self._working.remember(incoming.chat, [*self._working.get(incoming.chat, []), (message.author, message.timestamp)])
            self.desk.spawn(self._react, incoming.chat, message.author, message.timestamp, WORKING)

    def _skip(self, data: str) -> None:
        """Count an event that is not a user's message: a malformed one is logged, the usual quiet ones
        (typing, receipts, reactions, the account's other devices) are not."""
        if well_formed(data):
            self.skipped += 1
            return
        self.malformed += 1
        log.warning("signal: skipped an event that is not as signal-cli writes it (%d bytes)", len(data))

    async def _choose(self, chat: ChatRef, user_id: str, question: Question, index: int) -> None:
        # The desk decides who may answer; an answer taken edits the question, which forgets it here.
        await self._notice(chat, await self.desk.press(ButtonPress(chat, user_id, question.choices[index].data)))

    async def _notice(self, chat: ChatRef, text: str) -> None:
        try:
            await self.send_text(chat, text, markdown=False)
        except DeliveryFailed as exc:
            log.info("signal: a notice was not shown: %s", exc)

    async def _react(self, chat: ChatRef, author: str, timestamp: int, emoji: str) -> None:
        try:
            await self._client().call("sendReaction", emoji=emoji, targetAuthor=author, targetTimestamp=timestamp, **_to(chat))
        except DeliveryFailed as exc:
            log.debug("signal: the reaction %s was refused: %s", emoji, exc)

    def _answered(self, chat: ChatRef) -> None:
        for author, timestamp in self._working.pop(chat, None) or ():
            self.desk.spawn(self._react, chat, author, timestamp, DONE)  # one reaction per user on Signal: ✅ replaces 👀

    def _client(self) -> SignalClient:
        if self.client is None:
            raise SignalError("send", "the bot is not connected yet")
        return self.client

    # -- the gateway's port ---------------------------------------------------------------------

    async def _send(self, chat: ChatRef, styled: StyledText, **extra: Any) -> SentMessage:
        params: dict[str, Any] = {"message": styled.text, **_to(chat), **extra}
        if styled.styles:
            params["textStyle"] = list(styled.styles)
        result = await self._client().call("send", **params)
        timestamp = result.get("timestamp") if isinstance(result, dict) else None
        if not isinstance(timestamp, int):
            raise SignalError("send", "no timestamp in the answer")
        self.sent += 1
        self._sent.remember(timestamp)
        return SentMessage(chat, str(timestamp))

    async def send_text(self, chat: ChatRef, text: str, *, markdown: bool) -> SentMessage:
        """See :meth:`ChatPort.send_text`: Markdown as Signal's text styles (a notice as written), split at
        8,000 characters."""
        pieces = signal_chunks(text) if markdown else [StyledText(piece) for piece in _plain_pieces(text)]
        sent = None
        for piece in pieces or [StyledText("(no answer)")]:
            sent = await self._send(chat, piece)
        assert sent is not None
        if markdown:
            self._answered(chat)
        return sent

    async def send_choices(self, chat: ChatRef, text: str, choices: list[Choice]) -> SentMessage:
        """See :meth:`ChatPort.send_choices`: the choices numbered, answered by a reply."""
        how = ("Reply approve, approve session, approve always or deny (or the number).",
               "Reply with the number or the words of your choice.")
        return await ask(self._questions, chat, text, choices, lambda body: self._send(chat, StyledText(body[:SIGNAL_LIMIT])), how=how)

    async def edit_text(self, message: SentMessage, text: str) -> None:
        """See :meth:`ChatPort.edit_text`: a Signal edit (``send`` with ``editTimestamp``), paced per message
        and at most :data:`MAX_EDITS` of one; a question edited (answered elsewhere) takes no more answers."""
        forget_edited(self._questions, message)
        edits = self._edits.get(message.message_id, 0)
        if edits >= MAX_EDITS:
            log.debug("signal: message %s was edited %d times already; not again", message.message_id, edits)
            return
        self._edits.remember(message.message_id, edits + 1)

        async def edit() -> None:
            try:
                await self._send(message.chat, StyledText(text[:SIGNAL_LIMIT]), editTimestamp=int(message.message_id))
            except DeliveryFailed as exc:
                log.warning("signal chat %s: an edit was not made: %s", message.chat.chat_id, exc)

        await self.pacer.edit(message.message_id, edit)

    async def send_file(self, chat: ChatRef, path: Path) -> None:
        """See :meth:`ChatPort.send_file`: an attachment signal-cli reads from the path (it runs on this
        machine, as the daemon's user or one that can read the file)."""
        await self._send(chat, StyledText(""), attachments=[str(path)])

    async def typing(self, chat: ChatRef) -> None:
        """See :meth:`ChatPort.typing`: ``sendTyping``."""
        try:
            await self._client().call("sendTyping", **_to(chat))
        except DeliveryFailed as exc:
            log.debug("signal: the typing indicator was not sent: %s", exc)

    async def download(self, file: RemoteFile, destination: Path, limit: int) -> int:
        """See :meth:`ChatPort.download`: ``getAttachment`` answers the file's bytes in base64.

        Raises:
            DownloadFailed: not fetched, not base64, or over ``limit`` bytes.
        """
        try:
            result = await self._client().call("getAttachment", id=file.file_id)
        except SignalError as exc:
            raise DownloadFailed(f"download: {exc.error}") from None
        encoded = result.get("data") if isinstance(result, dict) else result
        if not isinstance(encoded, str) or len(encoded) > (limit // 3 + 1) * 4 + 4:
            raise DownloadFailed(f"download: the file is over {limit:,} bytes" if isinstance(encoded, str) else "download: no data in the answer")
        try:
            data = await trio.to_thread.run_sync(functools.partial(base64.b64decode, encoded, validate=True))
        except (binascii.Error, ValueError):
            raise DownloadFailed("download: the answer is not base64") from None
        if len(data) > limit:
            raise DownloadFailed(f"download: the file is over {limit:,} bytes")
        await trio.to_thread.run_sync(destination.write_bytes, data)
        return len(data)

    # -- deliveries -----------------------------------------------------------------------------

    async def destination_chat(self, destination: Destination) -> ChatRef:
        """See :meth:`PlatformAdapter.destination_chat`: a number, an account's uuid, or ``group:ID``."""
        target = destination.chat or self.config.home_channel
        if not target:
            raise UnknownDestination("signal has no home_channel configured; name a chat (signal:+NUMBER or signal:group:GROUP_ID)")
        chat = signal_chat(target)
        if chat is None:
            raise UnknownDestination(f"a signal chat is +NUMBER, an account's uuid or group:GROUP_ID, got {target!r}")
        return ChatRef(self.platform, chat)


def _to(chat: ChatRef) -> dict[str, Any]:
    """Whom a call names: the group (``groupId``) or the one recipient."""
    if chat.chat_id.startswith(GROUP):
        return {"groupId": chat.chat_id.removeprefix(GROUP)}
    return {"recipient": [chat.chat_id]}


def _plain_pieces(text: str) -> list[str]:
    """A notice in pieces within the limit."""
    return [text[i:i + SIGNAL_LIMIT] for i in range(0, len(text), SIGNAL_LIMIT)] if text.strip() else []
