"""Sending mail over SMTP: the standard library's ``smtplib`` in a worker thread, one connection per mail.

Why a thread here while IMAP speaks over a Trio stream: an SMTP exchange is short and bounded (connect,
EHLO, STARTTLS, AUTH, MAIL, RCPT, DATA, QUIT), each step under ``smtplib``'s socket timeout, and
``smtplib`` gets the parts that are easy to get wrong (the AUTH mechanisms, dot-stuffing, STARTTLS and
its second EHLO) right. A cancelled send abandons the thread, which ends within that timeout.

A temporary refusal (a 4xx reply: ``421`` too many connections, ``450``/``451`` try again later, the
usual form of a provider's rate limit) is waited out with back-off and tried again; a permanent one
(5xx) and a refused login fail at once.
"""

from __future__ import annotations

import logging
import smtplib
import ssl
from collections.abc import Callable
from email.message import EmailMessage

import trio

from actors.platform.outbound import DeliveryFailed

__all__ = ["SmtpAccount", "SmtpError", "SmtpSender"]

log = logging.getLogger("hermes_actors.email")

#: Tries of one mail while the server refuses it for now (4xx), and the longest pause between them.
ATTEMPTS, LONGEST_PAUSE = 5, 60.0


class SmtpError(DeliveryFailed):
    """The mail was not sent; the text says why, without the password."""


class _Deferred(Exception):
    """A 4xx reply: the server may take the mail later."""

    def __init__(self, code: int, text: str) -> None:
        super().__init__(f"{code} {text}")
        self.code = code


class SmtpAccount:
    """Where and as whom mail is sent.

    Args:
        host, port: the SMTP server.
        security: ``ssl`` (TLS from the start), ``starttls`` or ``none`` (plain: loopback tests only).
        user: the login (the bot's address).
        password: its password (never logged; no login when empty).
        timeout: seconds each step may take.
    """

    def __init__(self, host: str, port: int, security: str, user: str, password: str, timeout: float = 30.0) -> None:
        self.host, self.port, self.security, self.user, self.timeout = host, port, security, user, timeout
        self._password = password

    def send_now(self, message: EmailMessage, recipients: list[str]) -> None:
        """Send ``message`` (blocking: call it in a thread).

        Raises:
            _Deferred: a 4xx reply.
            SmtpError: anything else.
        """
        try:
            if self.security == "ssl":
                server: smtplib.SMTP = smtplib.SMTP_SSL(self.host, self.port, timeout=self.timeout, context=ssl.create_default_context())
            else:
                server = smtplib.SMTP(self.host, self.port, timeout=self.timeout)
            with server:
                if self.security == "starttls":
                    server.starttls(context=ssl.create_default_context())
                if self._password:
                    server.login(self.user, self._password)
                server.send_message(message, from_addr=self.user, to_addrs=recipients)
        except smtplib.SMTPRecipientsRefused as exc:
            codes = [code for code, _text in exc.recipients.values()]
            if codes and all(400 <= code < 500 for code in codes):
                raise _Deferred(codes[0], "recipient deferred") from None
            raise SmtpError(f"smtp: the recipient was refused ({', '.join(map(str, codes))})") from None
        except smtplib.SMTPAuthenticationError as exc:
            raise SmtpError(f"smtp: the login was refused ({exc.smtp_code})") from None
        except smtplib.SMTPResponseException as exc:
            text = exc.smtp_error.decode("utf-8", "replace") if isinstance(exc.smtp_error, bytes) else str(exc.smtp_error)
            if 400 <= exc.smtp_code < 500:
                raise _Deferred(exc.smtp_code, text[:200]) from None
            raise SmtpError(f"smtp: refused ({exc.smtp_code} {text[:200]})") from None
        except (smtplib.SMTPException, OSError, ssl.SSLError) as exc:
            raise SmtpError(f"smtp: could not send through {self.host}:{self.port} ({type(exc).__name__}: {str(exc)[:200]})") from None


class SmtpSender:
    """Sends mail through an :class:`SmtpAccount`, waiting out temporary refusals.

    Args:
        account: the server and login.
        first_pause: the first wait after a 4xx reply (doubling, at most a minute).
        clock: the current time, for the seconds waited (Trio's clock by default).
    """

    def __init__(self, account: SmtpAccount, first_pause: float, clock: Callable[[], float] = trio.current_time) -> None:
        self.account = account
        self.first_pause = first_pause
        self._clock = clock
        self.deferred = 0
        self.waited = 0.0

    async def send(self, message: EmailMessage, recipients: list[str]) -> None:
        """Send ``message`` to ``recipients``.

        Raises:
            SmtpError: refused for good, not reachable, or still deferred after :data:`ATTEMPTS` tries.
        """
        pause = self.first_pause
        for attempt in range(1, ATTEMPTS + 1):
            try:
                await trio.to_thread.run_sync(self.account.send_now, message, recipients, abandon_on_cancel=True)
                return
            except _Deferred as exc:
                self.deferred += 1
                if attempt == ATTEMPTS:
                    raise SmtpError(f"smtp: still deferred after {ATTEMPTS} tries ({exc})") from None
                log.warning("smtp: the server deferred a mail (%s); trying again in %.1f s", exc, pause)
                started = self._clock()
                await trio.sleep(pause)
                self.waited += self._clock() - started
                pause = min(pause * 2, LONGEST_PAUSE)
