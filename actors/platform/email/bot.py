"""``platform/email``: the email front door, one session per mail thread, through the gateway's desk.

Messages: none of its own (it is driven by the mailbox). State: the IMAP connection (opened again with
back-off when it drops), the SMTP account, the threads it answers in, the question it asked in each,
the attachments of the mail just read, and counters. Loop: log in (a refused login is logged once and
tried again every ``auth_retry_seconds``), select INBOX, read each unseen mail and mark it ``\\Seen``,
then wait for more with IDLE where the server has it (renewed every ``idle_seconds``), else poll every
``poll_interval`` seconds.

Each mail: a robot's or a list's is logged and skipped (:func:`~actors.platform.email.mail.automated`), as
is one whose envelope sender is of another domain than its ``From``, one that is not MIME, and one over
``max_message_bytes``; the bot's own mail is skipped. The others go to the desk as a direct message of
their ``From`` address (who may talk: ``allow_from``, by address), their thread being the conversation.

The bot is the gateway's :class:`~actors.platform.gateway.port.ChatPort` for email: an answer is one mail
(never split; past :data:`ANSWER_CAP` characters it is cut, the whole answer attached as ``answer.md``),
in the thread (``Re:`` its subject, ``In-Reply-To`` and ``References`` the user's mail). Mail cannot be
edited: progress edits are dropped (``tool_progress`` is off by default). An approval or clarify
question is a mail of its own, answered by a reply whose first line is ``approve`` (``approve req_1
once``, ``approve session``, ``deny`` ...), a choice's number or its words; the answer goes through the
desk (:meth:`~actors.platform.gateway.desk.GatewayDesk.press`), which decides who may give it. While
connected it is the registry's ``email`` platform (``email:someone@example.org``).
"""

from __future__ import annotations

import logging
import mimetypes
import re
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import trio

from actors import ActorHandle
from actors.platform.email.imap import ImapClient, ImapError, ImapLoginRefused, open_imap
from actors.platform.email.mail import Attachment, Mail, Unreadable, automated, compose, first_line, read_mail, spoofed
from actors.platform.email.smtp import SmtpAccount, SmtpSender
from actors.platform.gateway.adapter import PlatformAdapter
from actors.platform.gateway.desk import session_id_for
from actors.platform.gateway.fetch import DownloadFailed
from actors.platform.gateway.follower import parse_button
from actors.platform.gateway.port import ButtonPress, ChatRef, Choice, Incoming, RemoteFile, SentMessage, file_kind
from actors.platform.gateway.recent import Recent
from actors.platform.gateway.replies import Question, ask, chosen, forget_edited
from actors.platform.outbound import DeliveryFailed, Destination, OutboundRegistry, UnknownDestination
from actors.session import SessionService
from config.email import EmailConfig
from messages.supervision import ActorState

__all__ = ["ANSWER_CAP", "EMAIL_SOURCE", "EMAIL_TOOLSETS", "EmailBot", "email_session_id"]

EMAIL_SOURCE = "email"
EMAIL_TOOLSETS = ("hermes-email",)
SESSION_PREFIX = "em"
log = logging.getLogger("hermes_actors.email")

#: The longest answer sent in a mail's body, in characters (Hermes's cap); a longer one is cut there
#: and attached whole.
ANSWER_CAP = 50_000
#: The longest text of a user's mail handed to the model, in characters.
INCOMING_CAP = 50_000
#: Seconds an IMAP command's answer may take.
IMAP_TIMEOUT = 60.0
#: Times a mail is tried before it is skipped (one that fails the connection each time must not stop the bot).
TRIES = 3
#: Bytes of attachments held for the desk to fetch (the oldest are dropped past it).
HELD_BYTES = 64 * 1024 * 1024
_ADDRESS = re.compile(r"[^@\s:<>,]+@[^@\s:<>,]+\.[^@\s:<>,]+")


def email_session_id(sender: str, root: str) -> str:
    """The first session of a sender's mail thread: stable across restarts."""
    return session_id_for(SESSION_PREFIX, f"{sender}:{root}")


@attrs.frozen
class Thread:
    """A thread the bot answers in: its subject and the user's latest mail there."""

    subject: str
    message_id: str
    references: tuple[str, ...]


class EmailBot(PlatformAdapter):
    """The bot; see the module's docstring.

    Args:
        config: ``platforms.email`` (its address, password and servers set).
        sessions: the daemon's session service.
        outbound: where the bot registers while connected.
        state_dir: where the conversations' current sessions are kept.
        pairing: the ``pairing`` actor's handle (None: only ``allow_from``).
    """

    kind = "email"
    platform = EMAIL_SOURCE

    def __init__(
        self,
        config: EmailConfig,
        sessions: SessionService,
        outbound: OutboundRegistry,
        state_dir: Path,
        pairing: Callable[[], ActorHandle[Any] | None] = lambda: None,
    ) -> None:
        super().__init__(config, sessions, outbound, state_dir, pairing, prefix=SESSION_PREFIX, toolsets=EMAIL_TOOLSETS)
        self.config = config
        self.address = str(config.address).lower()
        account = SmtpAccount(str(config.smtp_host), config.smtp_port, config.smtp_mode, str(config.address), config.password or "")
        self.smtp = SmtpSender(account, config.retry_first_seconds)
        self.idle: bool | None = None
        self.mails = self.automated = self.spoofed = self.malformed = self.oversized = 0
        self.logins = self.login_refusals = self.idles = self.polls = 0
        self._threads = Recent()  # ChatRef -> Thread
        self._questions = Recent()  # ChatRef -> the Question asked there, until answered
        self._tries = Recent()  # (UIDVALIDITY, uid) -> times its reading was started
        self._held: OrderedDict[str, bytes] = OrderedDict()  # attachment id -> its bytes, until fetched

    def snapshot_details(self) -> dict[str, Any]:
        return {
            **self.connection_details(), "address": self.address, "idle": self.idle, "logins": self.logins,
            "login_refusals": self.login_refusals, "idles": self.idles, "polls": self.polls, "mails": self.mails,
            "automated": self.automated, "spoofed": self.spoofed, "malformed": self.malformed, "oversized": self.oversized,
            "deferred": self.smtp.deferred, "deferred_seconds": round(self.smtp.waited, 3),
        }

    async def main(self) -> None:
        self.state = ActorState.RUNNING
        await self.desk.load()
        await self.keep_connected(self._connect)

    # -- the mailbox --------------------------------------------------------------------------------

    async def _connect(self) -> None:
        config = self.config
        client = await open_imap(str(config.imap_host), config.imap_port, config.imap_security, IMAP_TIMEOUT, config.max_message_bytes)
        try:
            try:
                await client.login(str(config.address), config.password or "")
            except ImapLoginRefused as exc:
                await self._refused(exc)
                return
            self.login_refusals = 0
            self.logins += 1
            validity = await client.select("INBOX")
            self.idle = "IDLE" in client.capabilities or "IDLE" in await client.ask_capabilities()
            self.up()
            log.info("email: reading %s's INBOX (%s)", self.address, "IDLE" if self.idle else f"polled every {config.poll_interval:g} s")
            while True:
                await self._read_unseen(client, validity)
                if self.idle:
                    await client.idle(config.idle_seconds)
                    self.idles += 1
                else:
                    await trio.sleep(config.poll_interval)
                    self.polls += 1
        finally:
            await client.aclose()

    async def _refused(self, exc: ImapError) -> None:
        """A refused login: said clearly once, then tried again slowly (a password changed back, an
        app password created, a server's lockout lifted)."""
        self.login_refusals += 1
        self.down(str(exc))
        if self.login_refusals == 1:
            log.error("email: the IMAP server refused the login of %s (%s); check EMAIL_ADDRESS and EMAIL_PASSWORD "
                      "(an app password where the provider asks for one). Trying again every %.0f s",
                      self.address, exc, self.config.auth_retry_seconds)
        await trio.sleep(self.config.auth_retry_seconds)

    async def _read_unseen(self, client: ImapClient, validity: int) -> None:
        for uid in await client.unseen():
            key = (validity, uid)  # a mailbox made anew numbers its mail anew
            tries = self._tries.get(key, 0)
            if tries < TRIES:
                self._tries.remember(key, tries + 1)  # counted first: a mail that breaks the connection is not read forever
                await self._read_one(client, uid)
            elif tries == TRIES:
                self.malformed += 1
                log.warning("email: skipped mail %d: reading it failed %d times", uid, TRIES)
            self._tries.remember(key, TRIES + 1)  # handled: never read again, even if the mark below is lost
            await client.mark_seen(uid)

    async def _read_one(self, client: ImapClient, uid: int) -> None:
        cap = self.config.max_message_bytes
        size = await client.size(uid)
        if size is not None and size > cap:
            self.oversized += 1
            log.warning("email: skipped mail %d of %d bytes, over max_message_bytes (%d)", uid, size, cap)
            return
        raw = await client.fetch(uid)
        if raw is None:
            self.malformed += 1
            log.warning("email: skipped mail %d: the server sent no body for it", uid)
            return
        await self._mail(uid, raw)

    async def _mail(self, uid: int, raw: bytes) -> None:
        try:
            mail = read_mail(raw, max_chars=INCOMING_CAP, skip_attachments=self.config.skip_attachments)
        except Unreadable as exc:
            self.malformed += 1
            log.warning("email: skipped mail %d: %s", uid, exc)
            return
        if mail.sender == self.address:
            return  # the bot's own mail (a copy to itself): never an answer to itself
        reason = automated(mail)
        if reason is not None:
            self.automated += 1
            log.info("email: no answer to mail %d from %s: %s", uid, mail.sender, reason)
            return
        forged = spoofed(mail) if self.config.check_envelope else None
        if forged is not None:
            self.spoofed += 1
            log.warning("email: skipped mail %d claiming to be from %s: %s", uid, mail.sender, forged)
            return
        self.mails += 1
        chat = ChatRef(self.platform, mail.sender, mail.root)
        subject = self._threads[chat].subject if chat in self._threads else mail.subject
        self._threads.remember(chat, Thread(subject, mail.message_id, mail.references))
        question = self._questions.get(chat)
        index = _answer_index(mail.text, question) if question is not None else None
        if question is not None and index is not None:
            self.desk.spawn(self._choose, chat, mail.sender, question, index)
            return
        # A thread's first mail says its subject; so does a mail whose subject is all it says.
        said = bool(mail.subject) and (not mail.references or not mail.text)
        text = f"[Subject: {mail.subject}]\n\n{mail.text}".strip() if said else mail.text
        files = tuple(self._hold(uid, n, attachment) for n, attachment in enumerate(mail.attachments))
        await self.desk.take(Incoming(chat, mail.sender, mail.sender_name or mail.sender, text, True, True, files))

    def _hold(self, uid: int, n: int, attachment: Attachment) -> RemoteFile:
        """Keep an attachment's bytes for the desk's fetch (:meth:`download`), within :data:`HELD_BYTES`."""
        file_id = f"{uid}.{n}"
        self._held[file_id] = attachment.data
        while sum(map(len, self._held.values())) > HELD_BYTES and len(self._held) > 1:
            self._held.popitem(last=False)
        return RemoteFile(file_kind(attachment.content_type), file_id, attachment.name, len(attachment.data))

    async def _choose(self, chat: ChatRef, user: str, question: Question, index: int) -> None:
        self._questions.pop(chat, None)
        notice = await self.desk.press(ButtonPress(chat, user, question.choices[index].data))
        try:
            await self.send_text(chat, notice, markdown=False)
        except DeliveryFailed as exc:
            log.warning("email: the answer's notice to %s was not sent: %s", chat.chat_id, exc)

    # -- the gateway's port ---------------------------------------------------------------------

    async def send_text(self, chat: ChatRef, text: str, *, markdown: bool) -> SentMessage:
        """See :meth:`ChatPort.send_text`: one mail, never split; past :data:`ANSWER_CAP` characters it is
        cut and the whole answer attached as ``answer.md``."""
        if len(text) <= ANSWER_CAP:
            return await self._send(chat, text or "(no answer)")
        note = f"\n\n[The answer was longer than {ANSWER_CAP:,} characters; it is attached whole as answer.md.]"
        return await self._send(chat, text[:ANSWER_CAP] + note, (Attachment("answer.md", "text/markdown", text.encode()),))

    async def send_choices(self, chat: ChatRef, text: str, choices: list[Choice]) -> SentMessage:
        """See :meth:`ChatPort.send_choices`: a mail of its own listing the choices, answered by a reply."""
        parsed = parse_button(choices[0].data)
        request = f" {parsed[1]}" if parsed is not None else ""
        approval = (f"Reply with a first line of approve{request} once, approve{request} session, approve{request} always "
                    f"or deny{request} (or the number).")
        return await ask(self._questions, chat, text, choices, lambda body: self._send(chat, body),
                         how=(approval, "Reply with the number or the words of your choice."))

    async def edit_text(self, message: SentMessage, text: str) -> None:
        """See :meth:`ChatPort.edit_text`: a mail cannot be edited; a question answered elsewhere (by the
        desk's ``/approve``) takes no more answers."""
        forget_edited(self._questions, message)

    async def send_file(self, chat: ChatRef, path: Path) -> None:
        """See :meth:`ChatPort.send_file`: a mail in the thread with the file attached."""
        data = await trio.to_thread.run_sync(path.read_bytes)
        await self._send(chat, f"Attached: {path.name}", (Attachment(path.name, _content_type(path), data),))

    async def typing(self, chat: ChatRef) -> None:
        """See :meth:`ChatPort.typing`: mail has no typing indicator."""

    async def download(self, file: RemoteFile, destination: Path, limit: int) -> int:
        """See :meth:`ChatPort.download`: the attachment's bytes, already read with its mail.

        Raises:
            DownloadFailed: no longer held, or over ``limit`` bytes.
        """
        data = self._held.pop(file.file_id, None)
        if data is None:
            raise DownloadFailed("download: the attachment is no longer held")
        if len(data) > limit:
            raise DownloadFailed(f"download: the file is over {limit:,} bytes")
        await trio.to_thread.run_sync(destination.write_bytes, data)
        return len(data)

    async def _send(self, chat: ChatRef, text: str, attachments: tuple[Attachment, ...] = ()) -> SentMessage:
        thread = self._threads.get(chat)
        if thread is None:
            message = compose(str(self.config.address), chat.chat_id, first_line(text)[:78], text, attachments=attachments)
        else:
            message = compose(str(self.config.address), chat.chat_id, thread.subject, text, in_reply_to=thread.message_id,
                              references=thread.references, attachments=attachments)
        await self.smtp.send(message, [chat.chat_id])
        self.sent += 1
        return SentMessage(chat, str(message["Message-ID"]))

    # -- deliveries -----------------------------------------------------------------------------

    async def destination_chat(self, destination: Destination) -> ChatRef:
        """See :meth:`PlatformAdapter.destination_chat`: an address."""
        target = destination.chat or self.config.home_channel
        if not target:
            raise UnknownDestination("email has no home address configured (EMAIL_HOME_ADDRESS); name one (email:someone@example.org)")
        if not _ADDRESS.fullmatch(target):
            raise UnknownDestination(f"an email destination is an address, got {target!r}")
        return ChatRef(self.platform, target.lower(), None)


def _answer_index(text: str, question: Question) -> int | None:
    """The choice a reply's first line names; ``approve req_1 once`` names the request it answers, which
    is dropped (a reply to an older question's mail is still taken for the one asked now)."""
    words = first_line(text).split()
    parsed = parse_button(question.choices[0].data)
    if len(words) >= 2 and parsed is not None and words[1].lower() == parsed[1].lower():
        words = [words[0], *words[2:]]
    return chosen(" ".join(words), question)


def _content_type(path: Path) -> str:
    return mimetypes.guess_type(path.name)[0] or "application/octet-stream"
