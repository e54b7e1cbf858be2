"""The gateway's desk: every message of one platform, from who may talk to which session answers.

One desk per adapter. For each :class:`~actors.platform.gateway.port.Incoming` message it decides, in
order:

- **Is it for us?** In a group, only a message that mentions the bot, replies to it or matches one of
  the ``mention_patterns`` (when ``require_mention`` is on, outside the ``free_response_channels``), and none outside the
  ``allowed_channels`` when that list is set; no direct message when ``dm_policy`` is ``disabled``.
- **Who is it?** A user of ``allow_from``, in a group also one of ``group_allow_from`` or anyone in a
  chat of ``group_allowed_chats`` (``*`` in a list: everyone), one paired by the owner, or anyone when
  ``dm_policy`` is ``open``. A stranger in a direct message gets a pairing code when the DM policy is
  ``pairing``; as in Hermes, any other stranger is ignored (a group is never answered, nor a direct
  message once an allow list says who may talk), and logged. The model never sees them.
- **A command?** ``/stop``, ``/new``, ``/usage``, ``/status``, ``/approve``, ``/deny`` (and ``/help``,
  ``/start``) act at once, even while a turn runs: they must not wait behind it
  (docs/DECISIONS.md#d-gateway-commands-inline).
- **An answer?** While the session asks a ``clarify`` question in the chat, the owner's next message
  answers it.
- **Otherwise** it goes to the chat's session (created on the first message, woken from the store after
  a restart or hibernation) with the platform's ``busy_input_mode``, and the chat's entry of
  ``channel_prompts`` as that turn's addition to the system prompt (as Hermes adds it: never stored, so a
  changed prompt applies from the next message on). Files are fetched into the
  session's working directory first, and the model is told where they are; a voice note is heard
  (:mod:`~actors.platform.gateway.voice`) and the model reads what was said.

The answer comes back through the chat's :class:`~actors.platform.gateway.follower.ChatFollower`.

A conversation's **owner** is the user who started it (its first message, or ``/new``). Only the owner
answers its approvals and ``clarify`` questions, by button, reply or command: in a group anyone allowed
may talk to the session, but a colleague must not approve a command on the owner's behalf. Owners are
kept in a state file, so a restart does not hand a conversation to whoever speaks first after it.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import secrets
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVarTuple, Unpack

import attrs
import trio

from actors import ActorError, ActorHandle
from actors.platform.gateway.follower import (
    APPROVAL_LABELS,
    ChatFollower,
    parse_button,
    session_tag,
)
from actors.platform.gateway.pairing import CheckUser, PairingMessage, RequestCode, TooManyWaiting
from actors.platform.gateway.port import (
    ButtonPress,
    ChatPort,
    ChatRef,
    GatewaySettings,
    Incoming,
    RemoteFile,
)
from actors.platform.gateway.recent import Recent
from actors.platform.gateway.voice import Transcriber, TranscriptionFailed
from actors.platform.outbound import DeliveryFailed
from actors.platform.state_files import read_json, write_json
from actors.session import (
    NoTurnRunning,
    SessionBusy,
    SessionNotFound,
    SessionOptions,
    SessionService,
    TooManyRunningTurns,
)
from config.gateway import EVERYONE
from messages.session import AnswerRequest, CheckFiles, FileCheck, Interrupt, SessionMessage, Subscribe

__all__ = ["NOT_THE_OWNER", "REFUSAL", "ChatState", "GatewayDesk", "session_id_for"]

log = logging.getLogger("hermes_actors.platform.gateway")

#: The arguments a chat task is started with.
Ts = TypeVarTuple("Ts")

REFUSAL = "Sorry, I am not set up to talk with you. Ask the owner of this bot to let you in."
NOT_THE_OWNER = "Only the user who started this conversation may answer this."
HELP = (
    "Write to me as to a colleague. Commands:\n"
    "/stop – stop what I am doing\n/new – start a new conversation\n/usage – tokens used here\n"
    "/status – what I am doing\n/approve, /deny – answer a pending approval"
)
#: The kinds of file a person speaks in, transcribed when the daemon has a speech-to-text endpoint.
SPOKEN = ("voice", "audio")
_COMMAND = re.compile(r"^/([A-Za-z_]+)(?:@\S+)?(?:\s+(.*))?$", re.DOTALL)


def session_id_for(prefix: str, key: str) -> str:
    """A conversation's first session: stable across restarts, in an id space only its platform uses."""
    return f"{prefix}-{hashlib.sha256(key.encode()).hexdigest()[:24]}"


@attrs.define
class ChatState:
    """One conversation: its key, where it is, its session, the follower relaying that session, and
    the tasks under way for it (it is forgotten when its session sleeps and none is)."""

    key: str
    chat: ChatRef
    session_id: str
    lock: trio.Lock = attrs.Factory(trio.Lock)
    follower: ChatFollower | None = None
    tasks: int = 0


class GatewayDesk:
    """See the module's docstring.

    Args:
        port: the platform's sending side.
        settings: the platform's section.
        sessions: the daemon's session service.
        pairing: the ``pairing`` actor's handle, or None when the daemon runs none.
        state_dir: where the desk keeps its state files: each conversation restarted with ``/new`` and
            its current session (``<platform>-chats.json``), each conversation's owner
            (``<platform>-owners.json``).
        spawn: starts a task in the adapter's actor (its scope, its tree); the desk's tasks never fail it.
        prefix: the platform's session id prefix (``tg``).
        toolsets: the platform's toolsets (``hermes-telegram``).
    """

    def __init__(
        self,
        port: ChatPort,
        settings: GatewaySettings,
        sessions: SessionService,
        pairing: Callable[[], ActorHandle[PairingMessage] | None],
        state_dir: Path,
        spawn: Callable[..., None],
        *,
        prefix: str,
        toolsets: tuple[str, ...],
    ) -> None:
        self.port = port
        self.settings = settings
        self.sessions = sessions
        self.pairing = pairing
        self.chats_file = state_dir / f"{port.platform}-chats.json"
        self.owners_file = state_dir / f"{port.platform}-owners.json"
        self._spawn = spawn
        self.prefix = prefix
        self.toolsets = toolsets
        self.chats: dict[str, ChatState] = {}
        self.renewed: dict[str, str] = {}
        self.owners = Recent()  # conversation key -> the user who started it
        self._saving = trio.Lock()  # the state files are written whole, one writer at a time
        self.received = self.refused = self.ignored = self.commands = self.files = self.answers_refused = 0
        self._allowed = frozenset(settings.allow_from)
        self._group_allowed = frozenset(settings.group_allow_from)
        self._group_chats = frozenset(settings.group_allowed_chats)
        self._channels = frozenset(settings.allowed_channels)
        self._free_channels = frozenset(settings.free_response_channels)
        self._wake_words = tuple(re.compile(pattern, re.IGNORECASE) for pattern in settings.mention_patterns)
        self.dm_policy = settings.effective_dm_policy
        #: Hears voice notes; set by the daemon when ``stt`` names an endpoint (None: they reach the model as files).
        self.transcriber: Transcriber | None = None

    def spawn(
        self, task: Callable[[Unpack[Ts]], Awaitable[object]], *args: Unpack[Ts], chat: ChatState | None = None
    ) -> None:
        """Run ``task`` in the adapter's scope; an unexpected error is logged, and fails only that task
        (one chat's trouble never stops the platform). A task for ``chat`` keeps it remembered."""
        if chat is not None:
            chat.tasks += 1
        self._spawn(self._guarded, task, args, chat)

    async def _guarded(
        self, task: Callable[[Unpack[Ts]], Awaitable[object]], args: tuple[Unpack[Ts]], chat: ChatState | None
    ) -> None:
        try:
            await task(*args)
        except Exception:
            log.exception("%s: a chat task failed", self.port.platform)
        finally:
            if chat is not None:
                chat.tasks -= 1
                self._forget_if_idle(chat)

    def _forget_if_idle(self, chat: ChatState) -> None:
        """Drop a chat whose session sleeps and that nothing is under way for: a desk of a busy bot
        remembers its live chats, not every chat it ever had (the next message finds the session again)."""
        idle = chat.tasks == 0 and (chat.follower is None or chat.follower.subscription.closed)
        if idle and self.chats.get(chat.key) is chat:
            del self.chats[chat.key]

    def counts(self) -> dict[str, int]:
        """What the desk has seen, for the adapter's snapshot."""
        return {
            "received": self.received, "refused": self.refused, "ignored": self.ignored,
            "commands": self.commands, "files": self.files, "chats": len(self.chats),
            "answers_refused": self.answers_refused,
        }

    async def load(self) -> None:
        """Read which conversations were restarted with ``/new``, and who owns each (blocking file I/O in
        a thread)."""
        self.renewed = await trio.to_thread.run_sync(_read_strings, self.chats_file)
        for key, owner in (await trio.to_thread.run_sync(_read_strings, self.owners_file)).items():
            self.owners.remember(key, owner)

    async def _save(self, path: Path, value: dict[str, str]) -> None:
        async with self._saving:
            await trio.to_thread.run_sync(write_json, path, value)

    # -- incoming -----------------------------------------------------------------------------------

    async def take(self, incoming: Incoming) -> bool:
        """Decide what to do with a message (see the module's docstring); slow work is spawned. True when it
        goes to the chat's session (not ignored, refused or a command): one to mark as being worked on."""
        self.received += 1
        if incoming.private and self.dm_policy == "disabled":
            self.ignored += 1
            return False
        if not incoming.private and not self._for_us(incoming):
            self.ignored += 1
            return False
        if not await self._authorised(incoming.chat, incoming.user_id, private=incoming.private):
            self.refused += 1
            self.spawn(self._turn_away, incoming)
            return False
        chat = self._chat(incoming)
        if chat.key not in self.owners:
            self._own(chat, incoming.user_id)
        command = _COMMAND.match(incoming.text.strip()) if not incoming.files else None
        if command is not None and command.group(1).lower() in _COMMANDS:
            self.commands += 1
            self.spawn(self._command, chat, incoming, command.group(1).lower(), (command.group(2) or "").strip(), chat=chat)
            return False
        self.spawn(self._converse, chat, incoming, chat=chat)
        return True

    def _for_us(self, incoming: Incoming) -> bool:
        """Whether a group message is one to answer: in an allowed channel (when any is listed), and
        addressed to the bot (a mention, a reply, a wake word) unless mentions are not required there."""
        if self._channels and not _in_channel(self._channels, incoming.chat):
            return False
        if incoming.addressed or not self.settings.require_mention:
            return True
        return _in_channel(self._free_channels, incoming.chat) or any(word.search(incoming.text) for word in self._wake_words)

    def channel_prompt(self, chat: ChatRef) -> str | None:
        """The system-prompt addition of ``chat``'s turns: its thread's entry of ``channel_prompts``, else its
        chat's, else None (Hermes's order: the exact place first, then the one it belongs to)."""
        prompts = self.settings.channel_prompts
        for key in (chat.thread_id, chat.chat_id):
            if key is not None and key in prompts:
                return prompts[key]
        return None

    async def press(self, press: ButtonPress) -> str:
        """A button pressed; the short notice the platform shows the user."""
        parsed = parse_button(press.data)
        if parsed is None:
            return "This button is not mine."
        if not await self._authorised(press.chat, press.user_id, private=False):
            self.refused += 1
            return "You may not answer this."
        tag, request_id, index = parsed
        for chat in self.chats.values():
            follower = chat.follower
            request = follower.pending.get(request_id) if follower is not None else None
            if request is not None and session_tag(chat.session_id) == tag and chat.chat == press.chat and index < len(request.choices):
                if not self._owned_by(chat, press.user_id):
                    return NOT_THE_OWNER
                choice = request.choices[index]
                answered = await self._answer(chat, request_id, choice, f"{press.chat.platform} user {press.user_id}")
                return APPROVAL_LABELS.get(choice, choice) if answered else "Already answered."
        return "This question was already answered or has expired."

    def _own(self, chat: ChatState, user_id: str) -> None:
        """Make ``user_id`` the owner of ``chat``'s conversation, and keep that in the state file."""
        self.owners.remember(chat.key, user_id)
        self.spawn(self._save, self.owners_file, dict(self.owners))

    def _owned_by(self, chat: ChatState, user_id: str) -> bool:
        """Whether ``user_id`` may answer ``chat``'s questions: its owner's alone (logged and counted
        when refused)."""
        owner = self.owners.get(chat.key)
        if owner is None or owner == user_id:
            return True
        self.answers_refused += 1
        log.warning(
            "%s chat %s: user %s answered a question of a conversation user %s started; refused",
            chat.chat.platform, chat.chat.chat_id, user_id, owner,
        )
        return False

    async def may_talk(self, chat: ChatRef, user_id: str, *, private: bool) -> bool:
        """Whether ``user_id`` may talk in ``chat`` (allow lists, then pairing): for an adapter deciding
        before any message, such as whether to join a room it is invited to."""
        return await self._authorised(chat, user_id, private=private)

    async def _authorised(self, chat: ChatRef, user_id: str, *, private: bool) -> bool:
        """Whether ``user_id`` may talk in ``chat`` (a group's lists count outside direct messages)."""
        if self.dm_policy == "open" or _listed(self._allowed, user_id):
            return True
        if not private and (_listed(self._group_allowed, user_id) or _listed(self._group_chats, chat.chat_id)):
            return True
        pairing = self.pairing()
        if pairing is None:
            return False
        try:
            return await pairing.ask(CheckUser(chat.platform, user_id))
        except ActorError as exc:
            log.warning("pairing is not available (%s); user %s is refused", exc, user_id)
            return False

    async def _turn_away(self, incoming: Incoming) -> None:
        platform, user = incoming.chat.platform, incoming.user_id
        log.warning("%s: refused a message from user %s in chat %s (not allowed)", platform, user, incoming.chat.chat_id)
        if not incoming.private or self.dm_policy != "pairing":
            return  # as in Hermes: a group, and a DM under an allow list, get no answer (it would tell who listens)
        pairing = self.pairing()
        text = REFUSAL
        if pairing is not None:
            try:
                code = await pairing.ask(RequestCode(platform, user, incoming.user_name, incoming.chat.chat_id))
                text = (
                    f"Hi! I don't know you yet. Your pairing code is {code.code}.\n"
                    f"Ask the owner of this bot to run: hermes-actors pairing approve {code.code}\n"
                    "(The code is good for an hour.)"
                )
            except TooManyWaiting:
                text = f"{REFUSAL} (Too many requests are waiting; try again later.)"
            except ActorError as exc:
                log.warning("pairing is not available: %s", exc)
        await self._say(incoming.chat, text)

    def _chat(self, incoming: Incoming) -> ChatState:
        chat = incoming.chat
        key = ":".join(part for part in (chat.chat_id, chat.thread_id) if part)
        if not incoming.private and self.settings.group_sessions_per_user:
            key = f"{key}:user:{incoming.user_id}"
        state = self.chats.get(key)
        if state is None:
            session_id = self.renewed.get(key) or session_id_for(self.prefix, key)
            state = self.chats[key] = ChatState(key, chat, session_id)
        return state

    # -- a message for the session --------------------------------------------------------------------

    async def _converse(self, chat: ChatState, incoming: Incoming) -> None:
        async with chat.lock:  # a chat's messages reach its session in the order they came
            text = incoming.text
            try:
                follower = await self._follow(chat)
                clarify = follower.pending_of("clarify")
                if clarify is not None and text.strip() and not incoming.files and self._owned_by(chat, incoming.user_id):
                    await self._answer(chat, clarify.request_id, text.strip(), f"{chat.chat.platform} user {incoming.user_id}")
                    return
                images: tuple[str, ...] = ()
                if incoming.files:
                    text, images = await self._fetch_files(chat, incoming.files, text)
                await self.sessions.send(
                    chat.session_id, text, source=self.port.platform, busy_mode=self.settings.busy_input_mode, images=images,
                    system=self.channel_prompt(chat.chat),
                )
            except (TooManyRunningTurns, SessionBusy, NoTurnRunning, SessionNotFound, ActorError) as exc:
                log.warning("%s chat %s: a message was not taken: %s", chat.chat.platform, chat.chat.chat_id, exc)
                await self._say(chat.chat, f"Sorry, I could not take that message: {exc}")

    async def _follow(self, chat: ChatState) -> ChatFollower:
        """The chat's follower, started (with its session, created on a first message) if need be."""
        follower = chat.follower
        if follower is not None and not follower.subscription.closed:
            return follower
        handle = await self._session(chat)
        subscription = await handle.ask(Subscribe(f"{self.port.platform}/{chat.chat.chat_id}", passive=True))
        follower = chat.follower = ChatFollower(
            self.port, chat.chat, chat.session_id, subscription, self._checker(chat),
            tool_progress=self.settings.tool_progress,
        )
        self.spawn(follower.run, chat=chat)
        return follower

    async def _session(self, chat: ChatState) -> ActorHandle[SessionMessage]:
        try:
            return await self.sessions.get(chat.session_id)
        except SessionNotFound:
            options = SessionOptions(
                cwd=self._workspace(), source=self.port.platform, interactive=True,
                toolsets=self.toolsets, sandbox=self.settings.sandbox,
            )
            await self.sessions.create_session(options, session_id=chat.session_id)
            return await self.sessions.get(chat.session_id)

    def _checker(self, chat: ChatState) -> Callable[[CheckFiles], Awaitable[list[FileCheck]]]:
        async def check(request: CheckFiles) -> list[FileCheck]:
            try:
                handle = await self.sessions.get(chat.session_id)
                return await handle.ask(request)
            except (SessionNotFound, ActorError) as exc:
                return [FileCheck(path, refusal=f"the session could not check it ({exc})") for path in request.paths]

        return check

    def _workspace(self) -> str:
        return self.settings.cwd or str(Path.home())

    async def _fetch_files(self, chat: ChatState, files: tuple[RemoteFile, ...], text: str) -> tuple[str, tuple[str, ...]]:
        """Download each file into ``incoming/`` of the workspace; the message with a line per file, and
        the paths of the images (shown to a model that can see)."""
        directory = Path(self._workspace()) / "incoming"
        await trio.to_thread.run_sync(lambda: directory.mkdir(parents=True, exist_ok=True))
        cap = self.settings.max_file_bytes
        limit = cap or sys.maxsize
        lines, images = [], []
        for file in files:
            if file.size is not None and file.size > limit:
                log.warning("%s chat %s: a %s of %d bytes is over the %d-byte cap; not fetched", chat.chat.platform, chat.chat.chat_id, file.kind, file.size, cap)
                lines.append(f"[The user sent {_a(file.kind)} of {file.size:,} bytes, over the {cap:,}-byte limit; it was not fetched.]")
                continue
            target = directory / f"{secrets.token_hex(4)}-{_safe_name(file.name)}"
            try:
                size = await self.port.download(file, target, limit)
            except DeliveryFailed as exc:
                log.warning("%s chat %s: a %s was not fetched: %s", chat.chat.platform, chat.chat.chat_id, file.kind, exc)
                lines.append(f"[The user sent {_a(file.kind)}; it could not be fetched: {exc}]")
                continue
            self.files += 1
            if file.kind in SPOKEN:
                lines.append(await self._hear(chat, target, size))
                continue
            lines.append(f"[The user sent {_a(file.kind)}, saved at {target} ({size:,} bytes).]")
            if file.kind == "image":
                images.append(str(target))
        return "\n".join(part for part in (text, *lines) if part), tuple(images)

    async def _hear(self, chat: ChatState, recording: Path, size: int) -> str:
        """What the model reads of a voice note: what was said, as a quoted line (as Hermes passes it, so
        the model answers the words rather than remarking on the recording), or the file with a note."""
        transcriber = self.transcriber
        saved = f"saved at {recording} ({size:,} bytes)"
        if transcriber is None:
            return f"[The user sent a voice message, {saved}. No speech-to-text is configured, so it was not transcribed.]"
        try:
            said = await transcriber.transcribe(recording)
        except TranscriptionFailed as exc:
            log.warning("%s chat %s: a voice message was not transcribed: %s", chat.chat.platform, chat.chat.chat_id, exc)
            return f"[The user sent a voice message, {saved}. It could not be transcribed.]"
        if transcriber.echo:
            await self._say(chat.chat, f'🎙️ "{said}"')
        return f'"{said}"'

    async def _answer(self, chat: ChatState, request_id: str, answer: str, answered_by: str) -> bool:
        handle = self.sessions.live(chat.session_id)
        if handle is None:
            return False
        try:
            return await handle.ask(AnswerRequest(request_id, answer, answered_by))
        except ActorError as exc:
            log.warning("%s chat %s: an answer was not delivered: %s", chat.chat.platform, chat.chat.chat_id, exc)
            return False

    # -- commands -----------------------------------------------------------------------------------

    async def _command(self, chat: ChatState, incoming: Incoming, name: str, argument: str) -> None:
        reply = await _COMMANDS[name](self, chat, incoming, argument)
        await self._say(chat.chat, reply)

    async def _stop(self, chat: ChatState, incoming: Incoming, argument: str) -> str:
        handle = self.sessions.live(chat.session_id)
        if handle is None or not await self.sessions.turn_running(chat.session_id):
            return "Nothing is running."
        try:
            await handle.ask(Interrupt(requested_by=f"{chat.chat.platform} user {incoming.user_id} (/stop)"))
        except (NoTurnRunning, ActorError):
            return "Nothing is running."
        return "Stopping."

    async def _new(self, chat: ChatState, incoming: Incoming, argument: str) -> str:
        async with chat.lock:
            if chat.follower is not None:
                chat.follower.subscription.close()
                chat.follower = None
            try:
                await self.sessions.close_session(chat.session_id, f"new conversation ({chat.chat.platform} /new)")
            except SessionNotFound:
                pass
            chat.session_id = f"{session_id_for(self.prefix, chat.key)}-{secrets.token_hex(3)}"
            self.renewed[chat.key] = chat.session_id
            await self._save(self.chats_file, dict(self.renewed))
            self._own(chat, incoming.user_id)
        return "Started a new conversation."

    async def _usage(self, chat: ChatState, incoming: Incoming, argument: str) -> str:
        details = await self._details(chat)
        if details is None:
            return "No conversation yet."
        return (
            f"Turns: {details.get('turns', 0)}\nTokens: {details.get('prompt_tokens', 0):,} in, "
            f"{details.get('completion_tokens', 0):,} out"
        )

    async def _status(self, chat: ChatState, incoming: Incoming, argument: str) -> str:
        details = await self._details(chat)
        if details is None:
            return f"No conversation yet (session {chat.session_id} starts with your first message)."
        running = "working on a turn" if await self.sessions.turn_running(chat.session_id) else "idle"
        return (
            f"Session {chat.session_id}: {running}, model {details.get('model', '?')}, "
            f"{details.get('queued', 0)} queued, {details.get('pending_requests', 0)} waiting for you."
        )

    async def _details(self, chat: ChatState) -> dict[str, Any] | None:
        try:
            handle = await self.sessions.get(chat.session_id)
        except SessionNotFound:
            return None
        return dict(handle.statistics().details)

    async def _decide(self, chat: ChatState, incoming: Incoming, argument: str, *, deny: bool) -> str:
        follower = chat.follower
        request = follower.pending_of("approval") if follower is not None else None
        if request is None:
            return "Nothing is waiting for approval."
        if not self._owned_by(chat, incoming.user_id):
            return NOT_THE_OWNER
        choice = "deny" if deny else (argument.lower() or "once")
        if choice not in request.choices:
            return f"Answer with one of: {', '.join(request.choices)}."
        answered = await self._answer(chat, request.request_id, choice, f"{chat.chat.platform} user {incoming.user_id}")
        return APPROVAL_LABELS.get(choice, choice) + "." if answered else "It was already answered."

    async def _approve(self, chat: ChatState, incoming: Incoming, argument: str) -> str:
        return await self._decide(chat, incoming, argument, deny=False)

    async def _deny(self, chat: ChatState, incoming: Incoming, argument: str) -> str:
        return await self._decide(chat, incoming, argument, deny=True)

    async def _help(self, chat: ChatState, incoming: Incoming, argument: str) -> str:
        return HELP

    async def _say(self, chat: ChatRef, text: str) -> None:
        try:
            await self.port.send_text(chat, text, markdown=False)
        except DeliveryFailed as exc:
            log.warning("%s chat %s: a reply was not sent: %s", chat.platform, chat.chat_id, exc)


_COMMANDS: dict[str, Callable[[GatewayDesk, ChatState, Incoming, str], Awaitable[str]]] = {
    "stop": GatewayDesk._stop,
    "new": GatewayDesk._new,
    "reset": GatewayDesk._new,
    "usage": GatewayDesk._usage,
    "status": GatewayDesk._status,
    "approve": GatewayDesk._approve,
    "deny": GatewayDesk._deny,
    "help": GatewayDesk._help,
    "start": GatewayDesk._help,
}


def _listed(entries: frozenset[str], value: str) -> bool:
    return value in entries or EVERYONE in entries


def _in_channel(entries: frozenset[str], chat: ChatRef) -> bool:
    """Whether a per-channel list names ``chat``: its chat, its thread, or ``*``."""
    return _listed(entries, chat.chat_id) or (chat.thread_id is not None and chat.thread_id in entries)


def _a(kind: str) -> str:
    return f"an {kind}" if kind[:1] in "aeiou" else f"a {kind}"


def _safe_name(name: str) -> str:
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "_", os.path.basename(name)).strip("._")
    return cleaned[:80] or "file"


def _read_strings(path: Path) -> dict[str, str]:
    value = read_json(path)
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}
