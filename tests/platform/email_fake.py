"""A fake mail server on loopback, on Trio sockets: IMAP4rev1 (RFC 3501, with IDLE) and SMTP (RFC 5321), plain
text, small, speaking the real protocols.

IMAP: ``CAPABILITY`` (``IDLE`` listed unless the fake is made without it), ``LOGIN`` (quoted strings; a wrong
password answered ``NO [AUTHENTICATIONFAILED]``), ``SELECT INBOX``, ``UID SEARCH UNSEEN``, ``UID FETCH`` of
``RFC822.SIZE`` and ``BODY.PEEK[]`` (a literal), ``UID STORE +FLAGS.SILENT (\\Seen)``, ``IDLE`` (``+ idling``,
``* n EXISTS`` when mail comes, ended by ``DONE``), ``NOOP`` and ``LOGOUT``; anything else ``BAD``.

SMTP: ``EHLO``/``HELO``, ``AUTH PLAIN`` (with its initial response), ``MAIL FROM``, ``RCPT TO``, ``DATA``
(dot-stuffing undone), ``RSET``, ``NOOP``, ``QUIT``. The test can answer the next ``MAIL FROM`` with a 4xx
(a provider's rate limit).

Run it in the test's own Trio loop (``nursery.start(fake.serve)``) or in a thread of its own
(:func:`serving_mail`, for a daemon in another process); :meth:`FakeMail.deliver` and :meth:`FakeMail.drop`
work from either.
"""

from __future__ import annotations

import base64
import functools
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from email import policy
from email.message import EmailMessage
from email.parser import BytesParser
from email.utils import formatdate, make_msgid
from typing import Any

import attrs
import trio

__all__ = ["BOT", "PASSWORD", "FakeMail", "Sent", "serving_mail", "user_mail"]

BOT, PASSWORD = "hermes@bot.example", "app-PASSWORD-never-logged-77"
_ARGUMENT = re.compile(r'"((?:[^"\\]|\\.)*)"|(\S+)')


@attrs.define
class Stored:
    """A mail in the INBOX."""

    uid: int
    raw: bytes
    seen: bool = False


@attrs.frozen
class Sent:
    """A mail the fake SMTP server took."""

    mail_from: str
    recipients: tuple[str, ...]
    raw: bytes

    @property
    def message(self) -> EmailMessage:
        """The mail, parsed."""
        parsed = BytesParser(policy=policy.default).parsebytes(self.raw)
        assert isinstance(parsed, EmailMessage)
        return parsed

    @property
    def text(self) -> str:
        """The body's text (its line ends as written, not as sent)."""
        body = self.message.get_body(preferencelist=("plain",))
        assert body is not None
        return str(body.get_content()).replace("\r\n", "\n").strip()


def user_mail(sender: str, body: str, *, subject: str = "Hello", message_id: str | None = None,
              in_reply_to: str = "", references: str = "", headers: dict[str, str] | None = None,
              attachments: tuple[tuple[str, str, bytes], ...] = (), return_path: str | None = None) -> tuple[bytes, str]:
    """A person's mail as a receiving server stores it (``Return-Path`` first); its bytes and Message-ID."""
    message = EmailMessage()
    message["From"] = f"Some One <{sender}>"
    message["To"] = BOT
    message["Subject"] = subject
    message["Date"] = formatdate()
    message["Message-ID"] = message_id or make_msgid(domain=sender.rpartition("@")[2])
    if in_reply_to:
        message["In-Reply-To"] = in_reply_to
    if references:
        message["References"] = references
    for name, value in (headers or {}).items():
        message[name] = value
    message.set_content(body)
    for name, content_type, data in attachments:
        maintype, _, subtype = content_type.partition("/")
        message.add_attachment(data, maintype=maintype, subtype=subtype, filename=name)
    envelope = sender if return_path is None else return_path
    return f"Return-Path: <{envelope}>\r\n".encode() + message.as_bytes(policy=policy.SMTP), str(message["Message-ID"])


class _Lines:
    """One connection's lines (and DATA's), and the mailbox size it was last told (IMAP)."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.buffer = bytearray()
        self.known = 0

    async def line(self) -> bytes | None:
        while (end := self.buffer.find(b"\r\n")) < 0:
            data = await self.stream.receive_some(65536)
            if not data:
                return None
            self.buffer += data
        line = bytes(self.buffer[:end])
        del self.buffer[: end + 2]
        return line

    async def send(self, *lines: str | bytes) -> None:
        await self.stream.send_all(b"".join((line.encode() if isinstance(line, str) else line) + b"\r\n" for line in lines))


class FakeMail:
    """The fake's state; ``imap_port`` and ``smtp_port`` once serving.

    Args:
        idle: list IDLE among the IMAP capabilities.
    """

    def __init__(self, *, idle: bool = True) -> None:
        self.idle = idle
        self.password = PASSWORD
        self.lock = threading.Lock()
        self.mailbox: list[Stored] = []
        self.sent: list[Sent] = []
        self.defer_next: list[int] = []
        self.connections = self.logins = self.refused_logins = self.idles = self.searches = self.deferred = 0
        self.imap_port = self.smtp_port = 0
        self._token: trio.lowlevel.TrioToken | None = None
        self._wake = trio.Event()
        self._open: set[trio.SocketStream] = set()

    # -- what the test does ---------------------------------------------------------------------

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Listen on 127.0.0.1 (both protocols) until cancelled."""
        async with trio.open_nursery() as nursery:
            imap = await nursery.start(functools.partial(trio.serve_tcp, self._guard(self._imap), 0, host="127.0.0.1"))
            smtp = await nursery.start(functools.partial(trio.serve_tcp, self._guard(self._smtp), 0, host="127.0.0.1"))
            self.imap_port, self.smtp_port = imap[0].socket.getsockname()[1], smtp[0].socket.getsockname()[1]
            self._token = trio.lowlevel.current_trio_token()
            task_status.started()

    def deliver(self, raw: bytes) -> int:
        """Put a mail in the INBOX (from any thread); its uid. An IDLE client is told."""
        with self.lock:
            uid = (self.mailbox[-1].uid if self.mailbox else 0) + 1
            self.mailbox.append(Stored(uid, raw))
        self._in_trio(self._notify)
        return uid

    def drop(self) -> None:
        """Close every IMAP connection, as a failing network would."""
        self._in_trio(self._close_all)

    def unseen(self) -> list[int]:
        """The uids not marked ``\\Seen``."""
        with self.lock:
            return [stored.uid for stored in self.mailbox if not stored.seen]

    def sent_to(self, address: str) -> list[Sent]:
        """The mail sent to ``address``, in order."""
        with self.lock:
            return [sent for sent in self.sent if address in sent.recipients]

    def wait_for(self, predicate: Callable[[], Any], what: str, timeout: float = 30.0) -> None:
        """Block (a test's thread, not Trio's) until ``predicate`` holds."""
        deadline = time.monotonic() + timeout
        while not predicate():
            assert time.monotonic() < deadline, f"timed out waiting for {what}"
            time.sleep(0.05)

    def _in_trio(self, function: Callable[[], Any]) -> None:
        try:
            here = trio.lowlevel.current_trio_token() is self._token
        except RuntimeError:
            here = False
        if here:
            function()
        else:
            trio.from_thread.run_sync(function, trio_token=self._token)

    def _notify(self) -> None:
        self._wake.set()
        self._wake = trio.Event()

    def _close_all(self) -> None:
        for stream in list(self._open):
            stream.socket.close()  # the handler's next read or write fails
        self._open.clear()

    # -- IMAP -----------------------------------------------------------------------------------

    @staticmethod
    def _guard(handler: Callable[[trio.SocketStream], Any]) -> Callable[[trio.SocketStream], Any]:
        async def guarded(stream: trio.SocketStream) -> None:
            try:
                await handler(stream)
            except* (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                pass  # the client went, or the test dropped it (perhaps inside IDLE's nursery)

        return guarded

    async def _imap(self, stream: trio.SocketStream) -> None:
        self.connections += 1
        self._open.add(stream)
        lines = _Lines(stream)
        await lines.send("* OK fake IMAP4rev1 ready")
        while (line := await lines.line()) is not None:
            tag, _, rest = line.decode().partition(" ")
            command, _, argument = rest.partition(" ")
            command = command.upper()
            if command == "UID":
                command, _, argument = argument.partition(" ")
                command = "UID " + command.upper()
            handler = self._IMAP_COMMANDS.get(command)
            if handler is None:
                await lines.send(f"{tag} BAD unknown command")
            elif await handler(self, lines, tag, argument) is False:
                return
        self._open.discard(stream)

    async def _capability(self, lines: _Lines, tag: str, argument: str) -> None:
        await lines.send("* CAPABILITY IMAP4rev1" + (" IDLE" if self.idle else ""), f"{tag} OK done")

    async def _login(self, lines: _Lines, tag: str, argument: str) -> None:
        words = [quoted.replace('\\"', '"').replace("\\\\", "\\") if quoted else atom for quoted, atom in _ARGUMENT.findall(argument)]
        if words == [BOT, self.password]:
            self.logins += 1
            await lines.send(f"{tag} OK [CAPABILITY IMAP4rev1{' IDLE' if self.idle else ''}] logged in")
        else:
            self.refused_logins += 1
            await lines.send(f"{tag} NO [AUTHENTICATIONFAILED] Invalid credentials")

    async def _select(self, lines: _Lines, tag: str, argument: str) -> None:
        with self.lock:
            count, next_uid = len(self.mailbox), (self.mailbox[-1].uid + 1 if self.mailbox else 1)
        lines.known = count
        await lines.send(f"* {count} EXISTS", "* OK [UIDVALIDITY 1] ok", f"* OK [UIDNEXT {next_uid}] ok", f"{tag} OK [READ-WRITE] selected")

    async def _search(self, lines: _Lines, tag: str, argument: str) -> None:
        self.searches += 1
        await lines.send(" ".join(["* SEARCH", *map(str, self.unseen())]), f"{tag} OK search done")

    async def _fetch(self, lines: _Lines, tag: str, argument: str) -> None:
        uid_text, _, items = argument.partition(" ")
        with self.lock:
            found = [(n, stored) for n, stored in enumerate(self.mailbox, 1) if str(stored.uid) == uid_text]
        for seq, stored in found:
            if "RFC822.SIZE" in items.upper():
                await lines.send(f"* {seq} FETCH (UID {stored.uid} RFC822.SIZE {len(stored.raw)})")
            if "BODY.PEEK[]" in items.upper():
                await lines.stream.send_all(f"* {seq} FETCH (UID {stored.uid} BODY[] {{{len(stored.raw)}}}\r\n".encode() + stored.raw + b")\r\n")
        await lines.send(f"{tag} OK fetch done")

    async def _store(self, lines: _Lines, tag: str, argument: str) -> None:
        uid_text, _, flags = argument.partition(" ")
        with self.lock:
            for stored in self.mailbox:
                if str(stored.uid) == uid_text and "\\SEEN" in flags.upper():
                    stored.seen = True
        await lines.send(f"{tag} OK store done")

    async def _idle(self, lines: _Lines, tag: str, argument: str) -> None:
        self.idles += 1
        await lines.send("+ idling")

        async def announce() -> None:
            # As a real server: mail that came since the client was last told is announced at once.
            while True:
                woken = self._wake
                with self.lock:
                    count = len(self.mailbox)
                if count > lines.known:
                    lines.known = count
                    await lines.send(f"* {count} EXISTS")
                await woken.wait()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(announce)
            done = await lines.line()
            nursery.cancel_scope.cancel()
        if done is not None and done.strip().upper() == b"DONE":
            await lines.send(f"{tag} OK idle done")

    async def _noop(self, lines: _Lines, tag: str, argument: str) -> None:
        await lines.send(f"{tag} OK noop")

    async def _logout(self, lines: _Lines, tag: str, argument: str) -> bool:
        await lines.send("* BYE bye", f"{tag} OK logout")
        return False

    _IMAP_COMMANDS: dict[str, Callable[..., Any]] = {
        "CAPABILITY": _capability, "LOGIN": _login, "SELECT": _select, "UID SEARCH": _search, "UID FETCH": _fetch,
        "UID STORE": _store, "IDLE": _idle, "NOOP": _noop, "LOGOUT": _logout,
    }

    # -- SMTP -----------------------------------------------------------------------------------

    async def _smtp(self, stream: trio.SocketStream) -> None:
        lines = _Lines(stream)
        await lines.send("220 fake.example ESMTP")
        mail_from, recipients = "", list[str]()
        while (line := await lines.line()) is not None:
            verb, _, argument = line.decode().partition(" ")
            verb = verb.upper()
            if verb == "EHLO":
                await lines.send("250-fake.example", "250-AUTH PLAIN", "250 8BITMIME")
            elif verb == "HELO" or verb == "NOOP" or verb == "RSET":
                mail_from, recipients = ("", []) if verb == "RSET" else (mail_from, recipients)
                await lines.send("250 OK")
            elif verb == "AUTH":
                _mechanism, _, response = argument.partition(" ")
                _zid, user, password = base64.b64decode(response).decode().split("\0")
                await lines.send("235 2.7.0 accepted" if (user, password) == (BOT, self.password) else "535 5.7.8 bad credentials")
            elif verb == "MAIL":
                if self.defer_next:
                    self.deferred += 1
                    await lines.send(f"{self.defer_next.pop(0)} 4.7.0 too many mails, slow down")
                    continue
                mail_from = argument.partition(":")[2].strip().strip("<>").split(" ")[0]
                await lines.send("250 OK")
            elif verb == "RCPT":
                recipients.append(argument.partition(":")[2].strip().strip("<>"))
                await lines.send("250 OK")
            elif verb == "DATA":
                await lines.send("354 go ahead")
                body = []
                while (data := await lines.line()) is not None and data != b".":
                    body.append(data[1:] if data.startswith(b"..") else data)
                with self.lock:
                    self.sent.append(Sent(mail_from, tuple(recipients), b"\r\n".join(body) + b"\r\n"))
                mail_from, recipients = "", []
                await lines.send("250 OK queued")
            elif verb == "QUIT":
                await lines.send("221 bye")
                return
            else:
                await lines.send("502 not implemented")


@contextmanager
def serving_mail(fake: FakeMail) -> Iterator[FakeMail]:
    """Serve ``fake`` in a thread running Trio (for a daemon in another process); stopped at the end."""
    ready, stop = threading.Event(), threading.Event()

    async def server() -> None:
        async with trio.open_nursery() as nursery:
            await nursery.start(fake.serve)
            ready.set()
            await trio.to_thread.run_sync(stop.wait)
            nursery.cancel_scope.cancel()

    thread = threading.Thread(target=trio.run, args=(server,), daemon=True)
    thread.start()
    assert ready.wait(10), "the fake mail server did not start"
    try:
        yield fake
    finally:
        stop.set()
        thread.join(10)
