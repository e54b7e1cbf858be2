"""The few IMAP4rev1 commands the email bot needs (RFC 3501, IDLE from RFC 2177), spoken over a Trio
stream: LOGIN, SELECT, UID SEARCH UNSEEN, UID FETCH, UID STORE ``\\Seen``, IDLE, LOGOUT.

Why not the standard library's ``imaplib`` in a thread: it blocks, and an IDLE waits up to half an hour
for the server; a cancelled Trio task cannot stop a thread stuck in ``recv``, so the daemon's shutdown
(or a configuration reload) would wait for the server or leak the thread. Over a Trio stream every wait
is a checkpoint: a cancel ends an IDLE at once, and each command has its own timeout, so a server that
vanished without closing the connection is noticed when its answer is late.

Responses are read line by line; a line ending ``{n}`` is followed by an n-byte literal (a message's
bytes), read whole and capped. Only what the bot uses is parsed; anything else a server says untagged
is passed over.
"""

from __future__ import annotations

import re
import ssl

import attrs
import trio

from actors.platform.outbound import DeliveryFailed

__all__ = ["ImapClient", "ImapError", "ImapLoginRefused", "ImapRefused", "Response", "open_imap", "quoted"]

#: The longest response line read (a literal's bytes are not part of it).
MAX_LINE = 64 * 1024
_LITERAL = re.compile(rb"\{(\d+)\}$")
_UID = re.compile(rb"\bUID (\d+)")
_SIZE = re.compile(rb"\bRFC822\.SIZE (\d+)")
_VALIDITY = re.compile(rb"\[UIDVALIDITY (\d+)\]", re.IGNORECASE)


class ImapError(DeliveryFailed):
    """The connection failed, dropped, timed out, or a command was refused; the text says which."""


class ImapRefused(ImapError):
    """A command answered ``NO`` or ``BAD``.

    Args:
        text: what to say.
        answer: ``NO`` (refused) or ``BAD`` (not understood).
    """

    def __init__(self, text: str, answer: str) -> None:
        super().__init__(text)
        self.answer = answer


class ImapLoginRefused(ImapError):
    """The server refused the login: reconnecting at once will not help."""


@attrs.frozen
class Response:
    """One response line (its literals cut out) and the literals it held, in order."""

    line: bytes
    literals: tuple[bytes, ...] = ()


def quoted(text: str) -> str:
    """``text`` as an IMAP quoted string.

    Raises:
        ImapError: it holds a line break or a character beyond ASCII (which a quoted string cannot).
    """
    if any(ch in text for ch in "\r\n\0") or not text.isascii():
        raise ImapError("imap: a login name or password with line breaks or non-ASCII characters is not supported")
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


class ImapClient:
    """One IMAP connection; see the module's docstring.

    Args:
        stream: the connected (and, for ``ssl``, encrypted) stream.
        timeout: the seconds a command's answer may take.
        max_literal: the largest literal read (a message over it fails the command).
    """

    def __init__(self, stream: trio.abc.Stream, timeout: float, max_literal: int) -> None:
        self.stream = stream
        self.timeout = timeout
        self.max_literal = max_literal
        self.capabilities: frozenset[str] = frozenset()
        self._buffer = bytearray()
        self._tags = 0

    # -- reading ----------------------------------------------------------------------------------

    async def _fill(self) -> None:
        try:
            data = await self.stream.receive_some(65536)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            raise ImapError(f"imap: the connection failed ({type(exc).__name__})") from None
        if not data:
            raise ImapError("imap: the server closed the connection")
        self._buffer += data

    async def _line(self) -> bytes:
        while (end := self._buffer.find(b"\r\n")) < 0:
            if len(self._buffer) > MAX_LINE:
                raise ImapError(f"imap: a response line over {MAX_LINE} bytes")
            await self._fill()
        line = bytes(self._buffer[:end])
        del self._buffer[: end + 2]
        return line

    async def _exactly(self, size: int) -> bytes:
        while len(self._buffer) < size:
            await self._fill()
        data = bytes(self._buffer[:size])
        del self._buffer[:size]
        return data

    async def read(self) -> Response:
        """The next response, its literals read (each capped at ``max_literal``)."""
        line, literals = await self._line(), []
        while (literal := _LITERAL.search(line)) is not None:
            size = int(literal.group(1))
            if size > self.max_literal:
                raise ImapError(f"imap: a literal of {size:,} bytes, over the {self.max_literal:,}-byte cap")
            literals.append(await self._exactly(size))
            line = line[: literal.start()] + b"\0" + await self._line()
        return Response(line, tuple(literals))

    # -- commands ---------------------------------------------------------------------------------

    async def send(self, text: str) -> None:
        """Send one line (the CRLF added)."""
        try:
            await self.stream.send_all(text.encode("ascii") + b"\r\n")
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            raise ImapError(f"imap: the connection failed ({type(exc).__name__})") from None

    def _tag(self) -> str:
        self._tags += 1
        return f"H{self._tags:04d}"

    async def command(self, text: str, *, what: str = "") -> list[Response]:
        """Send a command and read its untagged responses until its own tagged answer.

        Raises:
            ImapError: the answer is not OK (its text, which never holds what was sent), or is late.
        """
        tag = self._tag()
        with trio.move_on_after(self.timeout) as late:
            await self.send(f"{tag} {text}")
            return await self._until(tag, what or text.split(" ", 1)[0])
        assert late.cancelled_caught
        raise ImapError(f"imap {what or text.split(' ', 1)[0]}: no answer within {self.timeout:.0f} s")

    async def _until(self, tag: str, what: str) -> list[Response]:
        untagged = []
        while True:
            response = await self.read()
            if not response.line.startswith(tag.encode() + b" "):
                if response.line.startswith(b"* BYE"):
                    raise ImapError(f"imap {what}: the server said goodbye ({_text(response.line)})")
                untagged.append(response)
                continue
            status = response.line[len(tag) + 1:]
            if status.startswith(b"OK"):
                self.capabilities = _listed_capabilities(status) or self.capabilities
                return untagged
            raise ImapRefused(f"imap {what}: {_text(status)}", _text(status).split(" ", 1)[0].upper())

    async def greeting(self) -> None:
        """Read the server's greeting (and the capabilities it may list).

        Raises:
            ImapError: not an ``OK`` greeting, or none in time.
        """
        with trio.move_on_after(self.timeout):
            response = await self.read()
            if not response.line.startswith((b"* OK", b"* PREAUTH")):
                raise ImapError(f"imap: the server refused the connection ({_text(response.line)})")
            self.capabilities = _listed_capabilities(response.line) or self.capabilities
            return
        raise ImapError("imap: no greeting from the server")

    async def ask_capabilities(self) -> frozenset[str]:
        """``CAPABILITY``: what the server can do (``IDLE`` ...), upper-cased."""
        for response in await self.command("CAPABILITY"):
            if response.line.upper().startswith(b"* CAPABILITY "):
                self.capabilities = frozenset(_text(response.line).upper().split()[2:])
        return self.capabilities

    async def login(self, user: str, password: str) -> None:
        """``LOGIN``; the password is never in an error's text.

        Raises:
            ImapLoginRefused: the server said NO, or the name or password cannot be sent as a quoted
                string (a line break, a character beyond ASCII).
            ImapError: another failure.
        """
        try:
            credentials = f"{quoted(user)} {quoted(password)}"
        except ImapError as exc:
            raise ImapLoginRefused(str(exc)) from None  # as refused: a setting to fix, said once
        try:
            await self.command(f"LOGIN {credentials}", what="LOGIN")
        except ImapRefused as exc:
            if exc.answer == "NO":
                raise ImapLoginRefused(str(exc)) from None
            raise

    async def select(self, mailbox: str = "INBOX") -> int:
        """``SELECT`` a mailbox (read-write, so ``\\Seen`` can be set); its ``UIDVALIDITY`` (0 when none is
        said): while it holds, a uid names the same mail."""
        for response in await self.command(f"SELECT {quoted(mailbox)}", what="SELECT"):
            found = _VALIDITY.search(response.line)
            if found is not None:
                return int(found.group(1))
        return 0

    async def unseen(self) -> list[int]:
        """``UID SEARCH UNSEEN``: the uids of the mail not read yet, oldest first."""
        uids: list[int] = []
        for response in await self.command("UID SEARCH UNSEEN", what="SEARCH"):
            if response.line.upper().startswith(b"* SEARCH"):
                uids += [int(word) for word in response.line.split()[2:] if word.isdigit()]
        return sorted(uids)

    async def size(self, uid: int) -> int | None:
        """``UID FETCH uid (RFC822.SIZE)``: a message's size in bytes; None when the server names none."""
        for response in await self.command(f"UID FETCH {uid} (RFC822.SIZE)", what="FETCH"):
            found, size = _UID.search(response.line), _SIZE.search(response.line)
            if found is not None and int(found.group(1)) == uid and size is not None:
                return int(size.group(1))
        return None

    async def fetch(self, uid: int) -> bytes | None:
        """``UID FETCH uid (BODY.PEEK[])``: a message's bytes (not marked read); None when none came."""
        for response in await self.command(f"UID FETCH {uid} (BODY.PEEK[])", what="FETCH"):
            found = _UID.search(response.line)
            if found is not None and int(found.group(1)) == uid and response.literals:
                return response.literals[0]
        return None

    async def mark_seen(self, uid: int) -> None:
        """``UID STORE uid +FLAGS.SILENT (\\Seen)``: it is not searched for again."""
        await self.command(f"UID STORE {uid} +FLAGS.SILENT (\\Seen)", what="STORE")

    async def idle(self, seconds: float) -> bool:
        """``IDLE`` for up to ``seconds``; whether the server said mail came (``EXISTS`` or ``RECENT``).

        Raises:
            ImapError: the server refused IDLE, dropped the connection, or did not end it in time.
        """
        tag = self._tag()
        await self.send(f"{tag} IDLE")
        changed = False
        with trio.move_on_after(self.timeout) as late:
            while not (line := (await self.read()).line).startswith(b"+"):  # untagged news may come first
                if line.startswith(tag.encode() + b" "):
                    raise ImapRefused(f"imap IDLE: {_text(line)}", "NO")
                changed = changed or _announces_mail(line)
        if late.cancelled_caught:
            raise ImapError(f"imap IDLE: no answer within {self.timeout:.0f} s")
        with trio.move_on_after(seconds):
            while not changed:
                changed = _announces_mail((await self.read()).line)
        with trio.move_on_after(self.timeout) as late:
            await self.send("DONE")
            await self._until(tag, "IDLE")
            return changed
        raise ImapError(f"imap IDLE: not ended within {self.timeout:.0f} s")

    async def logout(self) -> None:
        """``LOGOUT``, best effort, then close."""
        with trio.move_on_after(min(self.timeout, 5.0)):
            try:
                await self.command("LOGOUT")
            except ImapError:
                pass
        await self.aclose()

    async def aclose(self) -> None:
        """Close the stream."""
        with trio.CancelScope(shield=True):
            try:
                await self.stream.aclose()
            except (trio.BrokenResourceError, OSError):
                pass


def _text(line: bytes) -> str:
    return line.decode("utf-8", "replace")[:200]


def _announces_mail(line: bytes) -> bool:
    """Whether an untagged response says the mailbox grew (``* 4 EXISTS``, ``* 1 RECENT``)."""
    words = line.upper().split()
    return len(words) >= 3 and words[0] == b"*" and words[2] in (b"EXISTS", b"RECENT")


def _listed_capabilities(line: bytes) -> frozenset[str]:
    found = re.search(rb"\[CAPABILITY ([^\]]*)\]", line, re.IGNORECASE)
    return frozenset(found.group(1).decode("ascii", "replace").upper().split()) if found is not None else frozenset()


async def open_imap(host: str, port: int, security: str, timeout: float, max_literal: int) -> ImapClient:
    """Connect (with TLS for ``ssl``, upgraded for ``starttls``), read the greeting, learn the capabilities.

    Raises:
        ImapError: the server could not be reached, or refused.
    """
    stream: trio.abc.Stream
    with trio.move_on_after(timeout) as late:
        try:
            stream = await trio.open_tcp_stream(host, port)
        except OSError as exc:
            raise ImapError(f"imap: could not connect to {host}:{port} ({type(exc).__name__})") from None
    if late.cancelled_caught:
        raise ImapError(f"imap: could not connect to {host}:{port} within {timeout:.0f} s")
    if security == "ssl":
        stream = await _tls(stream, host, timeout)
    client = ImapClient(stream, timeout, max_literal)
    try:
        await client.greeting()
        if security == "starttls":
            await client.command("STARTTLS")
            client.stream = await _tls(stream, host, timeout)
        await client.ask_capabilities()
    except BaseException:
        await client.aclose()
        raise
    return client


async def _tls(stream: trio.abc.Stream, host: str, timeout: float) -> trio.SSLStream[trio.abc.Stream]:
    secure = trio.SSLStream(stream, ssl.create_default_context(), server_hostname=host)
    with trio.move_on_after(timeout):
        try:
            await secure.do_handshake()
        except (trio.BrokenResourceError, ssl.SSLError, OSError) as exc:
            await stream.aclose()
            raise ImapError(f"imap: the TLS handshake with {host} failed ({exc})") from None
        return secure
    await stream.aclose()
    raise ImapError(f"imap: the TLS handshake with {host} took over {timeout:.0f} s")
