"""``platform/mattermost``: the Mattermost bot, one session per DM and per channel thread, through the
gateway's desk.

Messages: none of its own (it is driven by the WebSocket's events). State: the REST client with its
rate-limit book, the event socket (resumed with back-off when it drops), the desk and counters. Loop:
check the token (``GET /users/me``: a 401 stops the bot, named in ``status``), open the events API and
read it; each user's ``posted`` event goes to the desk, or answers the question the bot asked there.

The bot is the gateway's :class:`~actors.platform.gateway.port.ChatPort` for Mattermost: Mattermost
renders Markdown itself (CommonMark with tables), so an answer is sent as the model wrote it, split at
16,383 characters; an answer stays in the thread it was asked in (``root_id``). Approvals and clarify
questions list their choices and are answered by a reply in the thread (``approve``, ``deny``, a
choice's number or words), by the conversation's owner only: interactive buttons would call an
integration URL, which a daemon behind NAT does not have. Edits (streamed progress) are paced
(``PUT /posts/{id}/patch``); files go up through ``/files``; a message being worked on gets 👀, then ✅
(``/reactions``). While connected it is the registry's ``mattermost`` platform (``mattermost:CHANNEL_ID``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import attrs
import trio

from actors import ActorHandle
from actors.platform.gateway.adapter import PlatformAdapter
from actors.platform.gateway.desk import session_id_for
from actors.platform.gateway.pacing import EditPacer
from actors.platform.gateway.recent import Recent
from actors.platform.gateway.port import ButtonPress, ChatRef, Choice, Incoming, RemoteFile, SentMessage
from actors.platform.gateway.replies import Question, ask, chosen, forget_edited
from actors.platform.gateway.transport import platform_client
from actors.platform.mattermost.client import MattermostClient, MattermostError
from actors.platform.mattermost.events import read_posted
from actors.platform.mattermost.socket import EventSocket, SocketLost, websocket_url
from actors.platform.outbound import DeliveryFailed, Destination, OutboundRegistry, UnknownDestination
from actors.session import SessionService
from config.mattermost import MattermostConfig
from markup import split_markdown
from messages.supervision import ActorState

__all__ = ["MATTERMOST_LIMIT", "MATTERMOST_SOURCE", "MATTERMOST_TOOLSETS", "MattermostBot", "mattermost_session_id"]

MATTERMOST_SOURCE = "mattermost"
MATTERMOST_TOOLSETS = ("hermes-mattermost",)
SESSION_PREFIX = "mm"
#: The longest post Mattermost keeps, in characters (its ``MaxPostSize`` default).
MATTERMOST_LIMIT = 16_383
log = logging.getLogger("hermes_actors.mattermost")
WORKING, DONE = "eyes", "white_check_mark"
#: What the model reads after a message cut at Mattermost's limit.
OVERSIZED_NOTE = f"\n\n[The message was longer than Mattermost's {MATTERMOST_LIMIT:,} characters and was cut here.]"


def mattermost_session_id(channel: str, root_id: str | None = None) -> str:
    """The first session of a Mattermost DM or channel thread: stable across restarts."""
    return session_id_for(SESSION_PREFIX, ":".join(part for part in (channel, root_id) if part))


class MattermostBot(PlatformAdapter):
    """The bot; see the module's docstring.

    Args:
        config: ``platforms.mattermost`` (its ``url`` set).
        token: the bot's access token (a secret: never logged).
        sessions: the daemon's session service.
        outbound: where the bot registers while connected.
        state_dir: where the conversations' current sessions are kept.
        pairing: the ``pairing`` actor's handle (None: only ``allow_from``).
    """

    kind = "mattermost"
    platform = MATTERMOST_SOURCE

    def __init__(
        self,
        config: MattermostConfig,
        token: str,
        sessions: SessionService,
        outbound: OutboundRegistry,
        state_dir: Path,
        pairing: Callable[[], ActorHandle[Any] | None] = lambda: None,
    ) -> None:
        super().__init__(config, sessions, outbound, state_dir, pairing, prefix=SESSION_PREFIX, toolsets=MATTERMOST_TOOLSETS)
        self.config = config
        self._token = token
        self.client: MattermostClient | None = None
        self.socket = EventSocket(config.websocket_url or websocket_url(str(config.url)), token, self._event, self.up)
        self.pacer = EditPacer(self.desk.spawn)
        self.bot_id = self.bot_username = ""
        self.skipped = 0
        self._threads = Recent()  # (channel, root_id) the bot takes part in: no mention needed there
        self._seen = Recent()  # post ids handled (a resumed socket may send one again)
        self._questions = Recent()  # ChatRef -> the Question asked there, until answered
        self._working = Recent()  # ChatRef -> the post ids marked 👀

    def snapshot_details(self) -> dict[str, Any]:
        client, socket = self.client, self.socket
        return {
            **self.connection_details(), "bot_user": self.bot_username, "socket_connections": socket.connections,
            "resumed": socket.resumed, "gaps": socket.gaps, "events": socket.events, "malformed": socket.malformed + self.skipped,
            "edits_coalesced": self.pacer.coalesced,
            "rate_limited": client.pause.rate_limited if client is not None else 0,
            "rate_limited_seconds": round(client.pause.waited, 3) if client is not None else 0.0,
        }

    async def main(self) -> None:
        self.state = ActorState.RUNNING
        await self.desk.load()
        async with platform_client() as http:
            self.client = MattermostClient(str(self.config.url), self._token, http)
            await self.keep_connected(self._connect)

    async def _connect(self) -> None:
        me = await self._client().request("GET", "/users/me", what="users/me")
        if not isinstance(me, dict) or not isinstance(me.get("id"), str):
            raise MattermostError("users/me", "no user id in the answer")
        self.bot_id, self.bot_username = me["id"], str(me.get("username") or "")
        wait = self.config.retry_first_seconds
        while True:
            try:
                await self.socket.serve()
                wait = self.config.retry_first_seconds
            except SocketLost as exc:
                self.connection, self.connection_error = "reconnecting", f"mattermost websocket: {exc}"
                log.warning("mattermost websocket: %s; trying again in %.1f s", exc, wait)
                await trio.sleep(wait)
                wait = min(wait * 2, 60.0)
                await self._client().request("GET", "/users/me", what="users/me")  # a revoked token stops here (401)
                continue
            if self.connection == "connected":
                self.connection = "reconnecting"
            await trio.sleep(self.config.retry_first_seconds)  # a server that drops every connection at once is not hammered

    # -- what Mattermost sends ------------------------------------------------------------------

    async def _event(self, name: str, data: dict[str, Any]) -> None:
        if name != "posted":
            return  # typing, reactions, status ...: nothing to answer
        posted = read_posted(data, self.bot_id, self.bot_username)
        if posted is None:
            if not isinstance(data.get("post"), str):
                self._skip("a posted event without its post")
            return
        incoming = posted.incoming
        if posted.post_id in self._seen:
            return
        self._seen.remember(posted.post_id)
        if len(incoming.text) > MATTERMOST_LIMIT:
            log.warning("mattermost channel %s: a message of %d characters, over Mattermost's %d; cut", incoming.chat.chat_id, len(incoming.text), MATTERMOST_LIMIT)
            incoming = attrs.evolve(incoming, text=incoming.text[:MATTERMOST_LIMIT] + OVERSIZED_NOTE)
        if not incoming.private and (incoming.chat.chat_id, incoming.chat.thread_id) in self._threads:
            incoming = attrs.evolve(incoming, addressed=True)  # a thread the bot is in: no mention needed
        question = self._questions.get(incoming.chat)
        index = chosen(incoming.text, question) if question is not None else None
        if question is not None and index is not None:
            self.desk.spawn(self._choose, incoming.chat, incoming.user_id, question, index)
            return
        await self._take(incoming, posted.post_id)

    async def _take(self, incoming: Incoming, post_id: str) -> None:
        before = (self.desk.refused, self.desk.ignored, self.desk.commands)
        await self.desk.take(incoming)
        if (self.desk.refused, self.desk.ignored) != before[:2]:
            return
        chat = incoming.chat
        if not incoming.private:
            self._threads.remember((chat.chat_id, chat.thread_id))
        if self.desk.commands == before[2] and self.config.reactions:
            self._working.remember(chat, [*self._working.get(chat, []), post_id])
            self.desk.spawn(self._react, post_id, WORKING, True)

    async def _choose(self, chat: ChatRef, user_id: str, question: Question, index: int) -> None:
        await self._notice(chat, await self.desk.press(ButtonPress(chat, user_id, question.choices[index].data)))

    async def _notice(self, chat: ChatRef, text: str) -> None:
        try:
            await self._post(chat, {"message": text})
        except DeliveryFailed as exc:
            log.info("mattermost: a notice was not shown: %s", exc)

    def _skip(self, what: str) -> None:
        self.skipped += 1
        log.warning("mattermost: skipped %s (not as Mattermost documents it)", what)

    async def _react(self, post_id: str, emoji: str, add: bool) -> None:
        try:
            if add:
                await self._client().request("POST", "/reactions", {"user_id": self.bot_id, "post_id": post_id, "emoji_name": emoji})
            else:
                await self._client().request("DELETE", f"/users/{self.bot_id}/posts/{quote(post_id)}/reactions/{emoji}", what="reactions")
        except DeliveryFailed as exc:
            log.debug("mattermost: the reaction %s was refused: %s", emoji, exc)

    def _answered(self, chat: ChatRef) -> None:
        for post_id in self._working.pop(chat, None) or ():
            self.desk.spawn(self._react, post_id, WORKING, False)
            self.desk.spawn(self._react, post_id, DONE, True)

    def _client(self) -> MattermostClient:
        if self.client is None:
            raise MattermostError("send", "the bot is not connected yet")
        return self.client

    # -- the gateway's port ---------------------------------------------------------------------

    async def send_text(self, chat: ChatRef, text: str, *, markdown: bool) -> SentMessage:
        """See :meth:`ChatPort.send_text`: as written either way (Mattermost renders Markdown itself, and a
        notice's plain words read the same rendered), split at Mattermost's limit."""
        sent = None
        for piece in split_markdown(text, MATTERMOST_LIMIT) or ["(no answer)"]:
            sent = await self._post(chat, {"message": piece})
        assert sent is not None
        if markdown:
            self._answered(chat)
        return sent

    async def send_choices(self, chat: ChatRef, text: str, choices: list[Choice]) -> SentMessage:
        """See :meth:`ChatPort.send_choices`: the choices numbered, answered by a reply in the thread."""
        how = ("Reply **approve**, **approve session**, **approve always** or **deny** (or the number) in this thread.",
               "Reply with the number or the words of your choice in this thread.")
        return await ask(self._questions, chat, text, choices, lambda body: self._post(chat, {"message": body[:MATTERMOST_LIMIT]}), how=how)

    async def edit_text(self, message: SentMessage, text: str) -> None:
        """See :meth:`ChatPort.edit_text`: ``PUT /posts/{id}/patch``, paced per post; a question edited
        (answered elsewhere) takes no more answers."""
        forget_edited(self._questions, message)
        body = {"message": text[:MATTERMOST_LIMIT]}

        async def patch() -> None:
            try:
                await self._client().request("PUT", f"/posts/{quote(message.message_id)}/patch", body, what="posts/patch")
            except DeliveryFailed as exc:
                log.warning("mattermost channel %s: an edit was not made: %s", message.chat.chat_id, exc)

        await self.pacer.edit(message.message_id, patch)

    async def send_file(self, chat: ChatRef, path: Path) -> None:
        """See :meth:`ChatPort.send_file`: upload to ``/files`` for the channel, then a post holding it."""
        data = await trio.to_thread.run_sync(path.read_bytes)
        uploaded = await self._client().request("POST", "/files", files={"files": (path.name, data)},
                                                data={"channel_id": chat.chat_id}, what="files")
        infos = uploaded.get("file_infos") if isinstance(uploaded, dict) else None
        file_id = infos[0].get("id") if isinstance(infos, list) and infos and isinstance(infos[0], dict) else None
        if not isinstance(file_id, str):
            raise MattermostError("files", "no file id in the answer")
        await self._post(chat, {"message": "", "file_ids": [file_id]})

    async def typing(self, chat: ChatRef) -> None:
        """See :meth:`ChatPort.typing`: the channel's typing indicator."""
        body = {"channel_id": chat.chat_id, "parent_id": chat.thread_id or ""}
        try:
            await self._client().request("POST", f"/users/{self.bot_id}/typing", body, what="typing")
        except DeliveryFailed as exc:
            log.debug("mattermost: the typing indicator was not sent: %s", exc)

    async def download(self, file: RemoteFile, destination: Path, limit: int) -> int:
        """See :meth:`ChatPort.download` (a Mattermost file's id)."""
        return await self._client().download(file.file_id, destination, limit)

    async def _post(self, chat: ChatRef, body: dict[str, Any]) -> SentMessage:
        post = {"channel_id": chat.chat_id, **body}
        if chat.thread_id:
            post["root_id"] = chat.thread_id
        created = await self._client().request("POST", "/posts", post, what="posts")
        post_id = created.get("id") if isinstance(created, dict) else None
        if not isinstance(post_id, str):
            raise MattermostError("posts", "no post id in the answer")
        self.sent += 1
        return SentMessage(chat, post_id)

    # -- deliveries -----------------------------------------------------------------------------

    async def destination_chat(self, destination: Destination) -> ChatRef:
        """See :meth:`PlatformAdapter.destination_chat`: a channel id (26 letters and digits)."""
        target = destination.chat or self.config.home_channel
        if not target:
            raise UnknownDestination("mattermost has no home_channel configured; name a channel (mattermost:CHANNEL_ID)")
        if not target.isalnum():
            raise UnknownDestination(f"a mattermost channel is its id (26 letters and digits), got {target!r}")
        return ChatRef(self.platform, target, destination.thread)
