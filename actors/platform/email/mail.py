"""Mail read into the gateway's terms, and the bot's mail written: pure functions of the bytes.

Reading: the sender is the one address of ``From`` (lower-cased; ``Reply-To`` and ``Sender`` are never
used, and answers go to ``From``, so a forged mail's answer reaches the real owner of the address, not
the forger). The text is the ``text/plain`` part (else the HTML part without its tags), its quoted
history cut off (``>`` lines, ``On ... wrote:``), capped. A conversation is the thread: its root is the
first ``References`` entry, else ``In-Reply-To``, else the mail's own ``Message-ID``, which is how mail
clients thread.

What is never answered (:func:`automated`): auto-replies (``Auto-Submitted`` other than ``no``,
``X-Autoreply``, ``X-Autorespond``, ``X-Auto-Response-Suppress``), mailing lists and bulk mail
(``List-Id``, ``List-Unsubscribe``, ``Precedence: bulk/list/junk``), bounces (an empty envelope sender,
``multipart/report``) and robots' addresses (``mailer-daemon``, ``postmaster``, ``noreply`` ...).

Spoofing: the envelope sender the receiving server recorded (``Return-Path``) must be in the ``From``
address's domain (or a subdomain of it, or it a subdomain of the envelope's); a mail whose envelope names
another domain is not trusted. SPF, DKIM and DMARC are the receiving mail server's to check (set it to
reject mail that fails them): nothing here re-checks them.
"""

from __future__ import annotations

import html
import re
from email import policy
from email.headerregistry import Address
from email.message import EmailMessage, Message
from email.parser import BytesParser
from email.utils import formatdate, getaddresses, make_msgid

import attrs

__all__ = ["Attachment", "Mail", "Unreadable", "automated", "compose", "first_line", "read_mail", "spoofed"]

#: Local parts of robots' addresses, never answered.
ROBOTS = ("mailer-daemon", "postmaster", "noreply", "no-reply", "no_reply", "donotreply", "do-not-reply", "bounce", "bounces")
_MESSAGE_ID = re.compile(r"<[^<>\s]+>")
_QUOTE_START = re.compile(r"^(On .+ wrote:|-----\s*Original Message\s*-----|_{10,})\s*$", re.IGNORECASE)


class Unreadable(ValueError):
    """The mail is not MIME as its headers say, or has no usable sender."""


@attrs.frozen
class Attachment:
    """A file a mail holds: its name, MIME type and bytes."""

    name: str
    content_type: str
    data: bytes


@attrs.frozen
class Mail:
    """A mail as the bot reads it.

    Attributes:
        sender: the ``From`` address, lower-cased.
        sender_name: its display name ('' when none).
        subject: the decoded subject.
        message_id: its ``Message-ID`` ('' when it has none).
        references: the thread's ids before it (``References``, then ``In-Reply-To`` if not among them).
        text: its own words (quoted history cut), capped.
        attachments: its files (none when they are skipped).
        headers: the headers that decide whether it is answered, lower-cased names.
    """

    sender: str
    sender_name: str
    subject: str
    message_id: str
    references: tuple[str, ...]
    text: str
    attachments: tuple[Attachment, ...]
    headers: dict[str, str]
    content_type: str

    @property
    def root(self) -> str:
        """The thread's first mail's id: the conversation's key."""
        return self.references[0] if self.references else self.message_id or f"<{self.sender}>"


def read_mail(raw: bytes, *, max_chars: int, skip_attachments: bool) -> Mail:
    """``raw`` read (see the module's docstring); the text cut at ``max_chars`` with a note saying so.

    Raises:
        Unreadable: not parseable, not exactly one sender address in ``From``, or nothing to read in it: no
            subject, text or file (a part whose charset or transfer encoding is broken reads as nothing).
    """
    try:
        message = BytesParser(policy=policy.default).parsebytes(raw)
        senders = [address for _name, address in getaddresses([str(value) for value in message.get_all("From", [])]) if address]
        if len(senders) != 1 or "@" not in senders[0]:
            raise Unreadable(f"From names {len(senders)} addresses; one is needed")
        sender_name = next((name for name, address in getaddresses([str(message.get("From", ""))]) if address), "")
        subject = " ".join(str(message.get("Subject", "")).split())
        message_id = _ids(str(message.get("Message-ID", "")))[:1]
        references = _ids(str(message.get("References", "")))
        for parent in _ids(str(message.get("In-Reply-To", ""))):
            if parent not in references:
                references.append(parent)
        text = _body(message)
        attachments = () if skip_attachments else tuple(_attachments(message))
        headers = {name.lower(): str(value) for name, value in message.items()}
        content_type = message.get_content_type()
    except Unreadable:
        raise
    except Exception as exc:  # the email package raises many kinds on broken MIME; each means the same here
        raise Unreadable(f"not readable as MIME ({type(exc).__name__}: {str(exc)[:120]})") from None
    text = _fresh(text)
    if not text and not attachments and not subject:
        raise Unreadable("neither a subject, text nor a file could be read from it")
    if len(text) > max_chars:
        text = text[:max_chars] + f"\n\n[The mail was longer than {max_chars:,} characters and was cut here.]"
    return Mail(senders[0].lower(), sender_name, subject, "".join(message_id), tuple(references), text, attachments, headers, content_type)


def _ids(value: str) -> list[str]:
    return _MESSAGE_ID.findall(value)


def _body(message: Message) -> str:
    part = message.get_body(preferencelist=("plain", "html")) if isinstance(message, EmailMessage) else None
    if part is None:
        return ""
    content = part.get_content()
    text = content if isinstance(content, str) else content.decode("utf-8", "replace")
    return _unhtml(text) if part.get_content_type() == "text/html" else text


def _unhtml(text: str) -> str:
    text = re.sub(r"(?is)<(script|style)\b.*?</\1>", "", text)
    text = re.sub(r"(?i)<br\s*/?>|</p>|</div>|</li>", "\n", text)
    return html.unescape(re.sub(r"<[^>]+>", "", text))


def _fresh(text: str) -> str:
    """The mail's own words: the lines before its quoted history."""
    lines = []
    for line in text.replace("\r\n", "\n").split("\n"):
        if line.lstrip().startswith(">") or _QUOTE_START.match(line.strip()):
            break
        lines.append(line)
    return "\n".join(lines).strip() or text.strip()


def _attachments(message: EmailMessage) -> list[Attachment]:
    found = []
    for part in message.iter_attachments():
        if part.get_content_maintype() == "multipart":
            continue
        data = part.get_payload(decode=True)
        if isinstance(data, bytes) and data:
            name = part.get_filename() or f"attachment.{part.get_content_subtype() or 'bin'}"
            found.append(Attachment(name, part.get_content_type(), data))
    return found


def automated(mail: Mail) -> str | None:
    """Why ``mail`` is a robot's or a list's (never answered), or None for a person's."""
    headers = mail.headers
    if headers.get("auto-submitted", "no").strip().lower() != "no":
        return f"Auto-Submitted: {headers['auto-submitted'][:40]}"
    if headers.get("precedence", "").strip().lower() in ("bulk", "list", "junk"):
        return f"Precedence: {headers['precedence'].strip()}"
    for name in ("list-id", "list-unsubscribe", "x-autoreply", "x-autorespond", "x-auto-response-suppress"):
        if name in headers:
            return f"a {name} header"
    if headers.get("return-path", "").strip() == "<>":
        return "an empty envelope sender (a bounce)"
    if mail.content_type == "multipart/report":
        return "a delivery report"
    if mail.sender.partition("@")[0] in ROBOTS:
        return f"a robot's address ({mail.sender})"
    return None


def spoofed(mail: Mail) -> str | None:
    """Why ``mail``'s ``From`` is not trusted (its envelope sender is of another domain), or None."""
    envelope = [address for _name, address in getaddresses([mail.headers.get("return-path", "")]) if address]
    if not envelope:
        return None
    theirs, ours = envelope[0].rpartition("@")[2].lower().rstrip("."), mail.sender.rpartition("@")[2]
    if theirs == ours or theirs.endswith("." + ours) or ours.endswith("." + theirs):
        return None
    return f"its envelope sender's domain ({theirs}) is not its From's ({ours})"


def first_line(text: str) -> str:
    """The first line that says something (an answer's words, before a signature)."""
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def compose(
    sender: str, to: str, subject: str, text: str, *,
    in_reply_to: str = "", references: tuple[str, ...] = (), attachments: tuple[Attachment, ...] = (),
) -> EmailMessage:
    """The bot's mail: ``Re:`` the subject when it answers a mail (``in_reply_to``), threaded with
    ``In-Reply-To`` and ``References``, marked as a program's (``Auto-Submitted: auto-replied``, RFC
    3834, so vacation responders do not answer it), with a fresh ``Message-ID``."""
    message = EmailMessage()
    message["From"] = sender
    message["To"] = to
    if in_reply_to and not subject.lower().startswith("re:"):
        subject = f"Re: {subject}" if subject else "Re: your mail"
    message["Subject"] = subject or "A message from your agent"
    message["Date"] = formatdate(localtime=True)
    message["Message-ID"] = make_msgid(domain=_domain(sender))
    if in_reply_to:
        message["In-Reply-To"] = in_reply_to
        message["References"] = " ".join((*references, in_reply_to)[-20:])
    message["Auto-Submitted"] = "auto-replied"
    message["X-Auto-Response-Suppress"] = "All"
    message.set_content(text)
    for attachment in attachments:
        maintype, _, subtype = attachment.content_type.partition("/")
        message.add_attachment(attachment.data, maintype=maintype, subtype=subtype or "octet-stream", filename=attachment.name)
    return message


def _domain(address: str) -> str:
    try:
        return Address(addr_spec=address).domain or "localhost"
    except (ValueError, IndexError):
        return "localhost"
