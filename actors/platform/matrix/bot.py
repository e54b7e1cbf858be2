"""``platform/matrix``: the Matrix bot, one session per room (and per thread), through the gateway's desk.

Messages: none of its own (it is driven by ``/sync``). State: the client with its rate-limit book, the
sync token (``since``, kept in ``state/matrix-sync.json`` so that a restart goes on from where it was
rather than answering old messages again), the rooms known to be direct messages, the desk and counters.
Loop: check the token (``whoami``), then long-poll ``/sync`` with a filter that asks only for messages,
reactions and invites; each batch's invites are joined when the inviter may talk to the bot (or it is a
direct message a stranger may pair in) and declined otherwise, its users' messages go to the desk and
its reactions answer questions. A ``/sync`` that fails is tried again from the same token after a pause
(doubling to a minute); a refused token leaves the bot off, the daemon serving. The very first sync only
takes the token and the invites: history from before the bot started is not answered.

The bot is the gateway's :class:`~actors.platform.gateway.port.ChatPort` for Matrix: Markdown is sent as
``org.matrix.custom.html`` beside the plain body, split at ``max_message_length``; streamed answers and
progress are edits (``m.replace``) paced per message; a message being worked on gets a 👀 reaction, then
✅ with its answer. Matrix has no buttons: an approval or a question with choices lists them, and its
answer is a reply (``approve``, ``deny``, ``approve session``, a choice's number or words; never a bare "yes" or "ok") or a reaction
on the question (👍 / 👎, 1️⃣ ...), from the one who started the conversation only. While connected it is
the registry's ``matrix`` platform (``matrix:!room:example.org``, ``matrix:#alias:example.org``).
"""

from __future__ import annotations

import json
import logging
import mimetypes
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import attrs
import trio

from actors import ActorHandle
from actors.platform.gateway.adapter import PlatformAdapter
from actors.platform.gateway.follower import APPROVAL_LABELS
from actors.platform.gateway.port import ButtonPress, ChatRef, Choice, Incoming, RemoteFile, SentMessage
from actors.platform.gateway.replies import Question, chosen
from markup import matrix_chunks, split_markdown
from actors.platform.gateway.transport import platform_client
from actors.platform.matrix.client import MatrixClient, MatrixError, MatrixTokenRefused
from actors.platform.matrix.events import Invite, Reaction, read_invite, read_message, read_reaction
from actors.platform.outbound import DeliveryFailed, Destination, OutboundRegistry, UnknownDestination
from actors.platform.gateway.pacing import EditPacer
from actors.platform.state_files import read_json, write_json
from actors.session import SessionService
from config.matrix import MatrixConfig
from messages.supervision import ActorState
from messages.wire_shapes import wire_object

__all__ = ["MATRIX_SOURCE", "MATRIX_TOOLSETS", "MatrixBot"]

MATRIX_SOURCE = "matrix"
MATRIX_TOOLSETS = ("hermes-matrix",)
SESSION_PREFIX = "mx"
log = logging.getLogger("hermes_actors.matrix")

#: What ``/sync`` is asked for: rooms' messages and reactions, the bot's invites; no presence, typing,
#: receipts or account data (a busy homeserver's largest answers), members loaded lazily.
SYNC_FILTER = json.dumps({
    "presence": {"not_types": ["*"]},
    "account_data": {"not_types": ["*"]},
    "room": {
        "timeline": {"limit": 50, "types": ["m.room.message", "m.reaction"]},
        "ephemeral": {"not_types": ["*"]},
        "state": {"lazy_load_members": True},
        "include_leave": False,
    },
}, separators=(",", ":"))
#: The longest pause between failed syncs.
RETRY_MAX = 60.0
#: Chats remembered (owners, questions, marked messages); the oldest are forgotten first.
REMEMBERED = 4096
WORKING, DONE = "👀", "✅"
#: Reactions that answer a question: yes, no, and the keycap digits for a choice's number.
YES, NO = frozenset({"👍", "✅", "✔️", "👍️"}), frozenset({"👎", "❌", "👎️"})
KEYCAPS = tuple(f"{n}\ufe0f\u20e3" for n in range(1, 10))
def _remember(mapping: dict[Any, Any], key: Any, value: Any) -> None:
    mapping.pop(key, None)
    mapping[key] = value
    while len(mapping) > REMEMBERED:
        del mapping[next(iter(mapping))]


def reacted(key: str, question: Question) -> int | None:
    """The index of the choice a reaction means (👍 / 👎 on an approval, a keycap digit's number)."""
    key = key.strip()
    if key in KEYCAPS and KEYCAPS.index(key) < len(question.choices):
        return KEYCAPS.index(key)
    if question.approval and key in YES:
        return 0
    if question.approval and key in NO:
        return [choice.label for choice in question.choices].index(APPROVAL_LABELS["deny"])
    return None


class MatrixBot(PlatformAdapter):
    """The bot; see the module's docstring.

    Args:
        config: ``platforms.matrix`` (its ``homeserver`` set).
        token: the access token (a secret: never logged).
        sessions: the daemon's session service.
        outbound: where the bot registers while connected.
        state_dir: where the sync token and the conversations' current sessions are kept.
        pairing: the ``pairing`` actor's handle (None: only ``allow_from``).
    """

    kind = "matrix"
    platform = MATRIX_SOURCE

    def __init__(
        self,
        config: MatrixConfig,
        token: str,
        sessions: SessionService,
        outbound: OutboundRegistry,
        state_dir: Path,
        pairing: Callable[[], ActorHandle[Any] | None] = lambda: None,
    ) -> None:
        super().__init__(config, sessions, outbound, state_dir, pairing, prefix=SESSION_PREFIX, toolsets=MATRIX_TOOLSETS)
        self.config = config
        self._token = token
        self.client: MatrixClient | None = None
        self.pacer = EditPacer(self.desk.spawn)
        self.user_id = config.user_id or ""
        self.since: str | None = None
        self.sync_file = state_dir / "matrix-sync.json"
        self.syncs = self.sync_errors = self.malformed = self.joined = self.declined = 0
        self._direct: dict[str, None] = {}  # rooms known to be direct messages
        self._members: dict[str, int] = {}  # room -> its joined members, as the last summary said
        self._questions: dict[ChatRef, Question] = {}
        self._asked: dict[str, ChatRef] = {}  # a question's event id -> its chat
        self._asking: dict[str, tuple[ChatRef, Question]] = {}  # a question's transaction id -> its chat, while sent
        self._working: dict[ChatRef, list[str]] = {}  # events marked 👀 -> (their reaction events)

    def snapshot_details(self) -> dict[str, Any]:
        client = self.client
        return {
            **self.connection_details(), "user_id": self.user_id, "syncs": self.syncs, "sync_errors": self.sync_errors,
            "rooms_joined": self.joined, "invites_declined": self.declined, "malformed": self.malformed,
            "edits_coalesced": self.pacer.coalesced,
            "rate_limited": client.pause.rate_limited if client is not None else 0, "retried": client.retried if client is not None else 0,
            "rate_limited_seconds": round(client.pause.waited, 3) if client is not None else 0.0,
        }

    async def main(self) -> None:
        self.state = ActorState.RUNNING
        await self.desk.load()
        saved = wire_object(await trio.to_thread.run_sync(read_json, self.sync_file))
        self.since = saved.get("since") if isinstance(saved.get("since"), str) else None
        self._direct = dict.fromkeys(room for room in saved.get("direct") or () if isinstance(room, str))
        async with platform_client() as http:
            self.client = MatrixClient(str(self.config.homeserver), self._token, http)
            await self.keep_connected(self._connect)

    async def _connect(self) -> None:
        client = self._client()
        whoami = str((await client.request("GET", "/account/whoami", what="whoami")).get("user_id") or "")
        if self.user_id and whoami and whoami != self.user_id:
            log.warning("matrix: the token is %s's, not the configured user_id %s; answering as %s", whoami, self.user_id, whoami)
        self.user_id = whoami or self.user_id
        wait = self.config.retry_first_seconds
        while True:
            first = self.since is None
            try:
                batch = await self._sync(0.0 if first else self.config.sync_timeout_seconds)
            except MatrixTokenRefused:
                raise
            except MatrixError as exc:
                self.sync_errors += 1
                self.connection, self.connection_error = "reconnecting", str(exc)
                log.warning("%s; syncing again in %.1f s from the same token", exc, wait)
                await trio.sleep(wait)
                wait = min(wait * 2, RETRY_MAX)
                continue
            wait = self.config.retry_first_seconds
            if self.connection != "connected":
                self.up()
            await self._handle(batch, history=first)

    async def _sync(self, timeout: float) -> dict[str, Any]:
        params = {"filter": SYNC_FILTER, "timeout": str(int(timeout * 1000))}
        if self.since is not None:
            params["since"] = self.since
        batch = await self._client().request("GET", "/sync", params=params, timeout=timeout + 30.0, what="sync")
        next_batch = batch.get("next_batch")
        if not isinstance(next_batch, str) or not next_batch:
            raise MatrixError("sync", "no next_batch in the answer")
        self.syncs += 1
        # Kept before the batch is handled: a crash while handling it loses it rather than answers it twice.
        self.since = next_batch
        await trio.to_thread.run_sync(write_json, self.sync_file, {"since": next_batch, "direct": list(self._direct)})
        return batch

    # -- what the homeserver sends ----------------------------------------------------------------

    async def _handle(self, batch: dict[str, Any], *, history: bool) -> None:
        rooms = wire_object(batch.get("rooms"))
        for room, joined in wire_object(rooms.get("join")).items():
            joined = wire_object(joined)
            count = wire_object(joined.get("summary")).get("m.joined_member_count")
            if isinstance(count, int):
                _remember(self._members, room, count)
            if history:
                continue  # before the bot started: not answered
            events = wire_object(joined.get("timeline")).get("events", [])  # a room with nothing new may have none
            if not isinstance(events, list):
                self._skip(f"a timeline of {room[:80]} without a list of events")
                continue
            for event in events:
                await self._event(room, event)
        for room, invited in wire_object(rooms.get("invite")).items():
            invite = read_invite(room, wire_object(invited).get("invite_state"), self.user_id)
            if invite is None:
                self._skip(f"an invite to {room[:80]} without the bot's membership event")
            else:
                self.desk.spawn(self._invited, invite)

    async def _event(self, room: str, event: Any) -> None:
        if not isinstance(event, dict) or not isinstance(event.get("event_id"), str):
            self._skip(f"an event in {room[:80]} that is not an object with an event_id")
            return
        if event.get("sender") == self.user_id:
            # The echo of a question can come before its send's answer does, and a reaction to it right after.
            asking = self._asking.pop(str(wire_object(event.get("unsigned")).get("transaction_id")), None)
            if asking is not None:
                self._asked_in(*asking, event["event_id"])
            return
        content = wire_object(event.get("content"))
        if event.get("type") == "m.reaction":
            reaction = read_reaction(room, event)
            if reaction is None:
                self._skip(f"a reaction in {room[:80]} without an annotation")
            else:
                await self._reaction(reaction)
            return
        if wire_object(content.get("m.relates_to")).get("rel_type") == "m.replace" or content.get("msgtype") == "m.notice" or not content:
            return  # a user's edit, a bot's notice, or a redacted message: nothing to answer
        incoming = read_message(room, event, self.user_id, private=self._private(room))
        if incoming is None:
            self._skip(f"an m.room.message in {room[:80]} of msgtype {str(content.get('msgtype'))[:40]!r}")
            return
        limit = self.config.max_message_length * 4
        if len(incoming.text) > limit:
            log.warning("matrix room %s: a message of %d characters; cut at %d", room, len(incoming.text), limit)
            incoming = attrs.evolve(incoming, text=incoming.text[:limit] + f"\n\n[The message was longer than {limit:,} characters and was cut here.]")
        question = self._questions.get(incoming.chat)
        index = chosen(incoming.text, question) if question is not None else None
        if question is not None and index is not None:
            self.desk.spawn(self._choose, incoming.chat, incoming.user_id, question, index)
            return
        await self._take(incoming, event["event_id"])

    async def _take(self, incoming: Incoming, event_id: str) -> None:
        before = (self.desk.refused, self.desk.ignored, self.desk.commands)
        await self.desk.take(incoming)
        if (self.desk.refused, self.desk.ignored) != before[:2]:
            return
        if self.desk.commands == before[2] and self.config.reactions:
            self.desk.spawn(self._mark, incoming.chat, event_id)

    async def _reaction(self, reaction: Reaction) -> None:
        chat = self._asked.get(reaction.target)
        question = self._questions.get(chat) if chat is not None else None
        if chat is None or question is None or question.message_id != reaction.target:
            return  # a reaction to anything else is the users' own business
        index = reacted(reaction.key, question)
        if index is not None:
            self.desk.spawn(self._choose, chat, reaction.sender, question, index)

    async def _choose(self, chat: ChatRef, user_id: str, question: Question, index: int) -> None:
        notice = await self.desk.press(ButtonPress(chat, user_id, question.choices[index].data))
        await self._notice(chat, notice)

    async def _invited(self, invite: Invite) -> None:
        private = invite.direct
        allowed = await self.desk.may_talk(ChatRef(self.platform, invite.room), invite.inviter, private=private)
        if allowed or (private and self.desk.dm_policy in ("pairing", "open")):
            try:
                await self._client().request("POST", f"/join/{quote(invite.room, safe='')}", {}, what="join")
            except DeliveryFailed as exc:
                log.warning("matrix: could not join %s (invited by %s): %s", invite.room, invite.inviter, exc)
                return
            self.joined += 1
            if private:
                _remember(self._direct, invite.room, None)
            log.info("matrix: joined %s, invited by %s%s", invite.room, invite.inviter, " (a direct message)" if private else "")
            return
        self.declined += 1
        log.warning("matrix: declined an invite to %s from %s (not allowed)", invite.room, invite.inviter)
        try:
            await self._client().request("POST", f"/rooms/{quote(invite.room, safe='')}/leave", {}, what="leave")
        except DeliveryFailed as exc:
            log.info("matrix: the invite to %s was not declined: %s", invite.room, exc)

    def _private(self, room: str) -> bool:
        return room in self._direct or 0 < self._members.get(room, 0) <= 2

    def _skip(self, what: str) -> None:
        self.malformed += 1
        log.warning("matrix: skipped %s (not as the spec writes it)", what)

    async def _mark(self, chat: ChatRef, event_id: str) -> None:
        reaction = await self._react(chat.chat_id, event_id, WORKING)
        if reaction is not None:
            _remember(self._working, chat, [*self._working.get(chat, []), f"{event_id} {reaction}"])

    async def _react(self, room: str, event_id: str, key: str) -> str | None:
        content = {"m.relates_to": {"rel_type": "m.annotation", "event_id": event_id, "key": key}}
        try:
            return await self._client().send(room, "m.reaction", content)
        except DeliveryFailed as exc:
            log.debug("matrix: the reaction %s was not sent: %s", key, exc)
            return None

    async def _unmark(self, chat: ChatRef, marked: str) -> None:
        event_id, reaction = marked.split(" ")
        try:
            path = f"/rooms/{quote(chat.chat_id, safe='')}/redact/{quote(reaction, safe='')}/{self._client().new_txn()}"
            await self._client().request("PUT", path, {}, what="redact")
        except DeliveryFailed as exc:
            log.debug("matrix: the working mark was not taken away: %s", exc)
        await self._react(chat.chat_id, event_id, DONE)

    def _answered(self, chat: ChatRef) -> None:
        for marked in self._working.pop(chat, None) or ():
            self.desk.spawn(self._unmark, chat, marked)

    async def _notice(self, chat: ChatRef, text: str) -> None:
        try:
            await self._send(chat, {"msgtype": "m.notice", "body": text})
        except DeliveryFailed as exc:
            log.info("matrix: a notice was not sent: %s", exc)

    def _client(self) -> MatrixClient:
        if self.client is None:
            raise MatrixError("send", "the bot is not connected yet")
        return self.client

    # -- the gateway's port ---------------------------------------------------------------------

    async def send_text(self, chat: ChatRef, text: str, *, markdown: bool) -> SentMessage:
        """See :meth:`ChatPort.send_text`: HTML beside the plain body when ``markdown``, else plain text."""
        limit = self.config.max_message_length
        pieces = matrix_chunks(text, limit) if markdown else [(piece, "") for piece in split_markdown(text, limit)]
        sent = None
        for body, html in pieces or [("(no answer)", "")]:
            content: dict[str, Any] = {"msgtype": "m.text", "body": body}
            if html:
                content.update({"format": "org.matrix.custom.html", "formatted_body": html})
            sent = await self._send(chat, content)
        assert sent is not None
        if markdown:
            self._answered(chat)
        return sent

    async def send_choices(self, chat: ChatRef, text: str, choices: list[Choice]) -> SentMessage:
        """See :meth:`ChatPort.send_choices`: the choices numbered, answered by a reply or a reaction."""
        lines = [f"{n}. {choice.label}" for n, choice in enumerate(choices, 1)]
        question = Question("", tuple(choices))
        how = ("Reply approve, approve session, approve always or deny (or the number), or react 👍 / 👎 here."
               if question.approval else "Reply with the number or the words of your choice, or react with its number.")
        txn = self._client().new_txn()
        _remember(self._asking, txn, (chat, question))
        sent = await self._send(chat, {"msgtype": "m.text", "body": "\n".join([text, "", *lines, "", how])}, txn)
        if self._asking.pop(txn, None) is not None:
            self._asked_in(chat, question, sent.message_id)
        return sent

    def _asked_in(self, chat: ChatRef, question: Question, event_id: str) -> None:
        _remember(self._questions, chat, attrs.evolve(question, message_id=event_id))
        _remember(self._asked, event_id, chat)

    async def edit_text(self, message: SentMessage, text: str) -> None:
        """See :meth:`ChatPort.edit_text`: an ``m.replace`` edit, paced per message; a question edited
        (answered) takes no more answers."""
        question = self._questions.get(message.chat)
        if question is not None and question.message_id == message.message_id:
            del self._questions[message.chat]
        body = text[: self.config.max_message_length]
        content = {
            "msgtype": "m.text", "body": f"* {body}", "m.new_content": {"msgtype": "m.text", "body": body},
            "m.relates_to": {"rel_type": "m.replace", "event_id": message.message_id},
        }

        async def replace() -> None:
            try:
                await self._client().send(message.chat.chat_id, "m.room.message", content)
            except DeliveryFailed as exc:
                log.warning("matrix room %s: an edit was not made: %s", message.chat.chat_id, exc)

        await self.pacer.edit(message.message_id, replace)

    async def send_file(self, chat: ChatRef, path: Path) -> None:
        """See :meth:`ChatPort.send_file`: upload to the content repository, then an ``m.image`` or ``m.file``."""
        content_type = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        size = (await trio.to_thread.run_sync(path.stat)).st_size
        uri = await self._client().upload(path, content_type)
        msgtype = "m.image" if content_type.startswith("image/") else "m.file"
        await self._send(chat, {"msgtype": msgtype, "body": path.name, "url": uri, "info": {"mimetype": content_type, "size": size}})

    async def typing(self, chat: ChatRef) -> None:
        """See :meth:`ChatPort.typing`: the room's typing notice, for five seconds."""
        path = f"/rooms/{quote(chat.chat_id, safe='')}/typing/{quote(self.user_id, safe='')}"
        try:
            await self._client().request("PUT", path, {"typing": True, "timeout": 5000}, what="typing")
        except DeliveryFailed as exc:
            log.debug("matrix: the typing notice was not sent: %s", exc)

    async def download(self, file: RemoteFile, destination: Path, limit: int) -> int:
        """See :meth:`ChatPort.download` (a Matrix file's id is its ``mxc://`` address)."""
        return await self._client().download(file.file_id, destination, limit)

    async def _send(self, chat: ChatRef, content: dict[str, Any], txn: str | None = None) -> SentMessage:
        if chat.thread_id:
            content = {**content, "m.relates_to": {"rel_type": "m.thread", "event_id": chat.thread_id, "is_falling_back": True,
                                                   "m.in_reply_to": {"event_id": chat.thread_id}}}
        event_id = await self._client().send(chat.chat_id, "m.room.message", content, txn)
        self.sent += 1
        return SentMessage(chat, event_id)

    # -- deliveries -----------------------------------------------------------------------------

    async def destination_chat(self, destination: Destination) -> ChatRef:
        """See :meth:`PlatformAdapter.destination_chat`: a room id, or an alias (``#ops:example.org``)
        looked up in the homeserver's directory."""
        target = destination.chat or self.config.home_channel
        if not target:
            raise UnknownDestination("matrix has no home_channel configured; name a room (matrix:!room:example.org)")
        if target.startswith("#"):
            found = await self._client().request("GET", f"/directory/room/{quote(target, safe='')}", what="directory")
            if not isinstance(found.get("room_id"), str):
                raise UnknownDestination(f"matrix has no room with the alias {target}")
            target = found["room_id"]
        if not target.startswith("!"):
            raise UnknownDestination(f"a matrix room is !id:server or #alias:server, got {target!r}")
        return ChatRef(self.platform, target, destination.thread)
