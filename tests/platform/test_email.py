"""The email bot's parts against the fake mail server on loopback (in this Trio loop, its clock jumping):
the IMAP client's commands, IDLE and its cancel, the SMTP sender's waiting out a deferral, and mail read
and written (threads, robots and lists, forged senders, broken MIME, caps)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from pathlib import Path

import pytest
import trio
import trio.testing
import yaml

from actors.platform.email.imap import ImapClient, ImapError, ImapLoginRefused, open_imap
from actors.platform.email.mail import Unreadable, automated, compose, read_mail, spoofed
from actors.platform.email.smtp import SmtpAccount, SmtpError, SmtpSender
from actors.platform.outbound import Destination, UnknownDestination
from config.email import EmailConfig, read_email_environment
from config.loader import load_config
from tests.platform.email_fake import BOT, PASSWORD, FakeMail, user_mail

USER = "owner@people.example"


@asynccontextmanager
async def _serving(**options: bool) -> AsyncIterator[FakeMail]:
    fake = FakeMail(**options)
    async with trio.open_nursery() as nursery:
        await nursery.start(fake.serve)
        yield fake
        nursery.cancel_scope.cancel()


async def _logged_in(fake: FakeMail, cap: int = 1 << 20) -> ImapClient:
    client = await open_imap("127.0.0.1", fake.imap_port, "none", 10.0, cap)
    await client.login(BOT, PASSWORD)
    assert await client.select() == 1  # the fake's UIDVALIDITY
    return client


class TestImapClient:
    """The client reads unseen mail by uid, marks it seen, and waits with IDLE, a cancel ending the wait."""

    async def test_unseen_fetched_and_marked(self) -> None:
        async with _serving() as fake:
            first = fake.deliver(user_mail(USER, "one")[0])
            fake.deliver(user_mail(USER, "two")[0])
            client = await _logged_in(fake)
            assert "IDLE" in client.capabilities
            assert await client.unseen() == [first, first + 1]
            raw = await client.fetch(first)
            assert raw == fake.mailbox[0].raw and await client.size(first) == len(raw)
            await client.mark_seen(first)
            assert await client.unseen() == [first + 1] and fake.unseen() == [first + 1]
            await client.logout()

    async def test_idle_wakes_on_new_mail_and_times_out(self, autojump_clock: trio.testing.MockClock) -> None:
        async with _serving() as fake:
            client = await _logged_in(fake)
            started = trio.current_time()
            assert await client.idle(600.0) is False  # nothing came: renewed after its time
            assert trio.current_time() - started >= 600.0

            async def later() -> None:
                await trio.sleep(5)
                fake.deliver(user_mail(USER, "news")[0])

            async with trio.open_nursery() as nursery:
                nursery.start_soon(later)
                assert await client.idle(600.0) is True
            assert fake.idles == 2
            await client.aclose()

    async def test_a_cancel_ends_an_idle_at_once(self, autojump_clock: trio.testing.MockClock) -> None:
        async with _serving() as fake:
            client = await _logged_in(fake)
            with trio.move_on_after(3) as scope:
                await client.idle(1500.0)
            assert scope.cancelled_caught and trio.current_time() < 10
            await client.aclose()

    async def test_refusals(self) -> None:
        """A wrong password is a refused login (its text never holds the password); a message over the cap,
        and a dropped connection, are errors, never a hang."""
        async with _serving() as fake:
            client = await open_imap("127.0.0.1", fake.imap_port, "none", 10.0, 1 << 20)
            with pytest.raises(ImapLoginRefused, match="AUTHENTICATIONFAILED") as refused:
                await client.login(BOT, "wrong-secret")
            assert "wrong-secret" not in str(refused.value)
            with pytest.raises(ImapLoginRefused, match="non-ASCII"):
                await client.login(BOT, "pässword")
            await client.aclose()
            uid = fake.deliver(user_mail(USER, "x" * 5000)[0])
            client = await _logged_in(fake, cap=1000)
            with pytest.raises(ImapError, match="over the 1,000-byte cap"):
                await client.fetch(uid)
            await client.aclose()
            client = await _logged_in(fake)
            fake.drop()
            with pytest.raises(ImapError, match="closed|failed"):
                await client.idle(60.0)
            await client.aclose()
        with pytest.raises(ImapError, match="could not connect"):
            await open_imap("127.0.0.1", fake.imap_port, "none", 5.0, 1000)


class TestSmtpSender:
    """A mail goes out with its headers; a 451 is waited out and tried again; a wrong password fails at once."""

    async def test_a_deferral_waited_out(self) -> None:
        async with _serving() as fake:
            fake.defer_next = [451, 421]
            sender = SmtpSender(SmtpAccount("127.0.0.1", fake.smtp_port, "none", BOT, PASSWORD, timeout=10), 0.01)
            message = compose(BOT, USER, "Plans", "The answer.", in_reply_to="<a@x>", references=("<root@x>",))
            await sender.send(message, [USER])
            [sent] = fake.sent
            assert sent.recipients == (USER,) and sent.mail_from == BOT and sent.text == "The answer."
            assert sent.message["Subject"] == "Re: Plans" and sent.message["In-Reply-To"] == "<a@x>"
            assert sent.message["References"] == "<root@x> <a@x>" and sender.deferred == 2 and fake.deferred == 2
            wrong = SmtpSender(SmtpAccount("127.0.0.1", fake.smtp_port, "none", BOT, "wrong-secret", timeout=10), 0.01)
            with pytest.raises(SmtpError, match="login was refused") as refused:
                await wrong.send(message, [USER])
            assert "wrong-secret" not in str(refused.value)


class TestReading:
    """Mail read: its thread, its own words, its files; robots, lists and forged senders are named; broken MIME refused."""

    def test_threads_and_words(self) -> None:
        raw, first = user_mail("Owner@People.Example", "Please look.\n\nOn Monday, Bot wrote:\n> old words", subject="Plans",
                               attachments=(("data.csv", "text/csv", b"a,b\n"),))
        mail = read_mail(raw, max_chars=1000, skip_attachments=False)
        assert mail.sender == USER and mail.subject == "Plans" and mail.root == first and mail.text == "Please look."
        assert [(a.name, a.data) for a in mail.attachments] == [("data.csv", b"a,b\n")]
        reply = read_mail(user_mail(USER, "more", in_reply_to="<b@x>", references="<r@x> <b@x>")[0], max_chars=1000, skip_attachments=True)
        assert reply.root == "<r@x>" and reply.references == ("<r@x>", "<b@x>")
        assert read_mail(b"From: a@x.example\r\nSubject: the weather?\r\n\r\n", max_chars=10, skip_attachments=False).text == ""
        long = read_mail(user_mail(USER, "y" * 3000)[0], max_chars=1000, skip_attachments=False)
        assert long.text.startswith("y" * 1000 + "\n\n[The mail was longer than 1,000 characters")

    @pytest.mark.parametrize(("headers", "sender", "why"), [
        ({"Auto-Submitted": "auto-replied"}, USER, "Auto-Submitted"),
        ({"Precedence": "bulk"}, USER, "Precedence"),
        ({"List-Id": "<team.lists.example>"}, USER, "list-id"),
        ({"X-Autoreply": "yes"}, USER, "x-autoreply"),
        ({}, "MAILER-DAEMON@people.example", "robot"),
        ({}, "noreply@people.example", "robot"),
    ])
    def test_robots_and_lists(self, headers: dict[str, str], sender: str, why: str) -> None:
        mail = read_mail(user_mail(sender, "out of office", headers=headers)[0], max_chars=100, skip_attachments=False)
        assert why in str(automated(mail))

    def test_a_person_and_forgeries(self) -> None:
        person = read_mail(user_mail(USER, "hi", return_path="bounce-1@mail.people.example")[0], max_chars=100, skip_attachments=False)
        assert automated(person) is None and spoofed(person) is None
        forged = read_mail(user_mail(USER, "hi", return_path="evil@attacker.example")[0], max_chars=100, skip_attachments=False)
        assert "attacker.example" in str(spoofed(forged))
        bounce = read_mail(user_mail(USER, "hi", return_path="")[0], max_chars=100, skip_attachments=False)
        assert "bounce" in str(automated(bounce))

    @pytest.mark.parametrize("raw", [
        b"From: a@x.example, b@y.example\r\nSubject: two\r\n\r\nhi\r\n",
        b"Subject: nobody\r\n\r\nhi\r\n",
        b"From: a@\r\n\r\nhi\r\n",
        b"From: a@x.example\r\nSubject:\r\nContent-Type: multipart/mixed; boundary=\"zz\"\r\n\r\n--zz\r\nContent-Type: text/plain; charset=no-such-charset\r\nContent-Transfer-Encoding: base64\r\n\r\n%%%\r\n--zz--\r\n",
    ])
    def test_unreadable(self, raw: bytes) -> None:
        with pytest.raises(Unreadable):
            read_mail(raw, max_chars=100, skip_attachments=False)


class TestConfig:
    """Hermes's EMAIL_* variables win; allow_from is lower-cased; email destinations are addresses."""

    def test_hermes_keys(self, tmp_path: Path) -> None:
        """Hermes's ``extra`` keys and its mapping form of the home address are read; what is not is reported."""
        (tmp_path / "config.yaml").write_text(yaml.safe_dump({"platforms": {"email": {
            "enabled": True, "allow_from": "Boss@Example.org, b@y.example", "home_channel": {"platform": "email", "chat_id": "me@home.example"},
            "extra": {"address": BOT, "imap_host": "imap.example", "smtp_host": "smtp.example", "skip_attachments": True,
                      "require_authenticated_sender": True},
        }}}))
        warnings: list[str] = []
        section = load_config(tmp_path, warnings=warnings, log_warnings=False).platforms.email
        assert (section.address, section.imap_host, section.smtp_host, section.skip_attachments) == (BOT, "imap.example", "smtp.example", True)
        assert section.allow_from == ("boss@example.org", "b@y.example") and section.home_channel == "me@home.example"
        assert any("require_authenticated_sender" in warning for warning in warnings), warnings

    def test_variables_and_destinations(self) -> None:
        section = read_email_environment(EmailConfig(allow_from=["Boss@Example.org"]), {
            "EMAIL_ADDRESS": BOT, "EMAIL_PASSWORD": PASSWORD, "EMAIL_IMAP_HOST": "imap.example", "EMAIL_SMTP_HOST": "smtp.example",
            "EMAIL_SMTP_PORT": "465", "EMAIL_ALLOWED_USERS": "A@B.example, c@d.example", "EMAIL_HOME_ADDRESS": "me@home.example",
            "EMAIL_TRUST_FROM_HEADER": "true",
        })
        assert not section.check_envelope and EmailConfig().check_envelope
        assert section.allow_from == ("a@b.example", "c@d.example") and section.smtp_mode == "ssl" and section.missing() == []
        assert section.home_channel == "me@home.example" and section.effective_dm_policy == "allowlist"
        assert EmailConfig(allow_from="X@Y.example").allow_from == ("x@y.example",)
        assert Destination.parse("email:me@home.example") == Destination("email", "me@home.example")
        with pytest.raises(UnknownDestination, match="an address"):
            Destination.parse("email:not-an-address")
