"""The email bot in a real daemon, against the fake IMAP and SMTP servers (loopback, plain text): a thread
answered in its thread, strangers, robots, lists, forgeries and broken mail skipped, an approval answered by
a reply, files both ways, a long answer in one mail after a deferral waited out, a dropped IMAP connection
opened again, polling without IDLE, a refused login said once, and a cron delivery."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.daemon.helpers import DaemonProcess, ScriptedProviderProcess, run_cli
from tests.daemon.platform_helpers import bot_details, user_texts, wait_connected
from tests.platform.email_fake import BOT, PASSWORD, FakeMail, Sent, serving_mail, user_mail

OWNER, STRANGER = "owner@people.example", "stranger@elsewhere.example"


@pytest.fixture
def mail() -> Iterator[FakeMail]:
    """The fake mail server (IMAP with IDLE, SMTP), on loopback in a thread of its own."""
    with serving_mail(FakeMail()) as fake:
        yield fake


def _start(home: Path, provider: ScriptedProviderProcess, fake: FakeMail, **section: Any) -> DaemonProcess:
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    config = {"enabled": True, "address": BOT, "imap_host": "127.0.0.1", "imap_port": fake.imap_port, "imap_security": "none",
              "smtp_host": "127.0.0.1", "smtp_port": fake.smtp_port, "smtp_security": "none", "allow_from": ["Owner@People.Example"],
              "poll_interval": 0.2, "retry_first_seconds": 0.05, **section}
    (home / "config.yaml").write_text(json.dumps({
        "model": {"default": "scripted-model", "provider": "custom", "base_url": provider.base_url},
        "platforms": {"email": config},
    }))
    daemon = DaemonProcess(home)
    daemon.extra_env = {"EMAIL_PASSWORD": PASSWORD}
    return daemon.start()


def _details(home: Path) -> dict[str, Any]:
    return bot_details(home, "email")


def _mails(fake: FakeMail, count: int, to: str = OWNER) -> list[Sent]:
    fake.wait_for(lambda: len(fake.sent_to(to)) >= count, f"{count} mails to {to}")
    return fake.sent_to(to)


class TestConversations:
    """A mail is answered in its thread (Re: its subject, In-Reply-To and References), a reply in the thread
    continues its session and a new subject starts another; strangers, robots, lists, forged envelopes,
    broken and oversized mail get no answer and a log line; status shows the bot."""

    def test_threads_and_what_is_never_answered(self, home: Path, provider: ScriptedProviderProcess, mail: FakeMail) -> None:
        provider.reset()
        daemon = _start(home, provider, mail, max_message_bytes=4096)
        try:
            wait_connected(home, "email")
            provider.push({"text": "Tuesday works."}, {"text": "At ten, then."}, {"text": "Another matter."})
            raw, asked = user_mail(OWNER, "When shall we meet?", subject="Plans")
            mail.deliver(raw)
            [answer] = _mails(mail, 1)
            message = answer.message
            assert answer.text == "Tuesday works." and message["Subject"] == "Re: Plans" and message["From"] == BOT
            assert message["In-Reply-To"] == asked and message["References"] == asked
            assert message["Auto-Submitted"] == "auto-replied"
            replied = str(message["Message-ID"])
            mail.deliver(user_mail(OWNER, "What time?\n\nOn Monday, the bot wrote:\n> Tuesday works.", subject="Re: Plans",
                                   in_reply_to=replied, references=f"{asked} {replied}")[0])
            second = _mails(mail, 2)[1].message
            assert second["Subject"] == "Re: Plans" and second["References"].split()[0] == asked
            history = [m["content"] for m in provider.requests()[-1]["body"]["messages"] if m["role"] == "user"]
            assert history == ["[Subject: Plans]\n\nWhen shall we meet?", "What time?"]  # one session, quotes cut
            assert "email" in provider.requests()[-1]["body"]["messages"][0]["content"]  # the platform hint
            for skipped in (
                user_mail(STRANGER, "let me in")[0],
                user_mail(OWNER, "I am away", headers={"Auto-Submitted": "auto-replied"})[0],
                user_mail(OWNER, "digest", headers={"List-Id": "<news.lists.example>"})[0],
                user_mail(OWNER, "forged", return_path="evil@attacker.example")[0],
                b"Subject: no sender\r\n\r\nhello\r\n",
                user_mail(OWNER, "x" * 6000)[0],
            ):
                mail.deliver(skipped)
            mail.deliver(user_mail(OWNER, "Something else", subject="Other")[0])
            third = _mails(mail, 3)[2]
            assert third.text == "Another matter." and third.message["Subject"] == "Re: Other"
            assert len(user_texts(provider)) == 3 and "Something else" in user_texts(provider)[2]
            assert len(provider.requests()[-1]["body"]["messages"]) == 2  # a new thread: a session of its own
            mail.wait_for(lambda: mail.unseen() == [], "every mail marked seen")
            assert mail.sent_to(STRANGER) == []
            details = _details(home)
            assert details["idle"] is True and details["mails"] == 4 and details["refused"] == 1, details
            assert details["automated"] == 2 and details["spoofed"] == 1 and details["malformed"] == 1 and details["oversized"] == 1
            statuses = json.loads(run_cli(home, "status", "--json").stdout)["platforms"]
            [status] = [s for s in statuses if s["name"] == "email"]
            assert status["connection"] == "connected" and status["chats"] >= 1, status
        finally:
            daemon.stop()
        log = daemon.log()
        assert PASSWORD not in log
        assert f"refused a message from user {STRANGER}" in log and "Auto-Submitted: auto-replied" in log and "a list-id header" in log
        assert "attacker.example" in log and "From names 0 addresses" in log and "over max_message_bytes" in log


class TestApprovals:
    """An approval is a mail of its own, answered by a reply whose first line approves it; through the desk."""

    def test_an_approval_answered_by_reply(self, home: Path, provider: ScriptedProviderProcess, mail: FakeMail, tmp_path: Path) -> None:
        provider.reset()
        daemon = _start(home, provider, mail, sandbox="full-access")
        target = tmp_path / "victim"  # a directory of the test's own: the command removes nothing else
        target.mkdir()
        try:
            wait_connected(home, "email")
            provider.push(
                {"tool_calls": [{"id": "rm1", "name": "terminal", "arguments": {"command": f"rm -r {target}"}}]},
                {"text": "Removed it."},
            )
            raw, asked = user_mail(OWNER, "remove that directory", subject="Cleanup")
            mail.deliver(raw)
            [question] = _mails(mail, 1)
            assert "Approval needed" in question.text and "1. Allow once" in question.text and "4. Deny" in question.text
            request = question.text.split("approve ", 1)[1].split()[0]
            assert question.message["In-Reply-To"] == asked and target.exists()
            mail.deliver(user_mail(OWNER, f"approve {request} once\n\n-- \nSent from my phone\n\n> Approval needed", subject="Re: Cleanup",
                                   in_reply_to=str(question.message["Message-ID"]), references=asked)[0])
            mail.wait_for(lambda: any(sent.text == "Removed it." for sent in mail.sent_to(OWNER)), "the turn's answer")
            assert not target.exists()
            assert any(sent.text == "Allow once" for sent in mail.sent_to(OWNER))  # the answer taken, said
            assert user_texts(provider) == ["[Subject: Cleanup]\n\nremove that directory"]  # the reply answered, not asked
        finally:
            daemon.stop()


class TestFilesAndLimits:
    """An attachment is fetched into the workspace and a reply's file goes back attached; a long answer is one
    mail, cut at 50,000 characters with the whole attached; a 451 is waited out."""

    def test_files_a_long_answer_and_a_deferral(self, home: Path, provider: ScriptedProviderProcess, mail: FakeMail, tmp_path: Path) -> None:
        provider.reset()
        workspace = tmp_path / "work"
        workspace.mkdir()
        (workspace / "report.txt").write_bytes(b"the report's bytes")
        daemon = _start(home, provider, mail, cwd=str(workspace))
        try:
            wait_connected(home, "email")
            provider.push({"text": f"Here it is.\nMEDIA:{workspace}/report.txt"})
            mail.deliver(user_mail(OWNER, "look at this", attachments=(("data.csv", "text/csv", b"a,b\n1,2\n"),))[0])
            sent = _mails(mail, 2)
            assert sent[0].text == "Here it is."
            [attached] = list(sent[1].message.iter_attachments())
            assert attached.get_filename() == "report.txt" and attached.get_content() == "the report's bytes"
            [saved] = (workspace / "incoming").iterdir()
            assert saved.name.endswith("-data.csv") and saved.read_bytes() == b"a,b\n1,2\n" and str(saved) in user_texts(provider)[0]
            mail.defer_next = [451]
            long = "\n\n".join(f"Paragraph {i}: " + "words " * 100 for i in range(100))
            provider.push({"text": long})
            mail.deliver(user_mail(OWNER, "write a lot", subject="Essay")[0])
            essay = _mails(mail, 3)[2]
            assert len(mail.sent_to(OWNER)) == 3  # one mail, not split
            assert essay.text.startswith("Paragraph 0:") and "it is attached whole as answer.md" in essay.text
            [whole] = list(essay.message.iter_attachments())
            assert whole.get_filename() == "answer.md" and whole.get_content().strip() == long.strip()
            details = _details(home)
            assert details["deferred"] == 1 and mail.deferred == 1
        finally:
            daemon.stop()


class TestConnection:
    """A dropped IMAP connection is opened again; without IDLE the mailbox is polled; a refused login is logged
    once and tried again slowly until it is accepted."""

    def test_a_dropped_connection_is_opened_again(self, home: Path, provider: ScriptedProviderProcess, mail: FakeMail) -> None:
        provider.reset()
        daemon = _start(home, provider, mail)
        try:
            wait_connected(home, "email")
            mail.wait_for(lambda: mail.idles >= 1, "the first IDLE")
            mail.drop()
            mail.wait_for(lambda: mail.logins >= 2, "the second login")
            provider.push({"text": "Still here."})
            mail.deliver(user_mail(OWNER, "are you there?")[0])
            assert _mails(mail, 1)[0].text == "Still here."
            details = _details(home)
            assert details["logins"] == 2 and details["connection"] == "connected", details
        finally:
            daemon.stop()
        assert "imap: the server closed the connection; trying again in 1 s" in daemon.log()  # with back-off

    def test_polling_without_idle(self, home: Path, provider: ScriptedProviderProcess) -> None:
        provider.reset()
        with serving_mail(FakeMail(idle=False)) as fake:
            daemon = _start(home, provider, fake)
            try:
                wait_connected(home, "email")
                provider.push({"text": "Polled."})
                fake.deliver(user_mail(OWNER, "hello")[0])
                assert _mails(fake, 1)[0].text == "Polled."
                details = _details(home)
                assert details["idle"] is False and details["polls"] >= 1 and fake.idles == 0, details
            finally:
                daemon.stop()

    def test_a_refused_login_is_said_once(self, home: Path, provider: ScriptedProviderProcess, mail: FakeMail) -> None:
        mail.password = "changed-by-the-owner"
        daemon = _start(home, provider, mail, auth_retry_seconds=0.2)
        try:
            mail.wait_for(lambda: mail.refused_logins >= 3, "three refused logins")
            details = _details(home)
            assert details["connection"] == "failed" and "AUTHENTICATIONFAILED" in str(details["connection_error"]), details
            mail.password = PASSWORD  # an app password made, say
            wait_connected(home, "email")
        finally:
            daemon.stop()
        log = daemon.log()
        assert log.count("refused the login") == 1 and "check EMAIL_ADDRESS and EMAIL_PASSWORD" in log and PASSWORD not in log


class TestDelivery:
    """A cron job delivers to an address as a mail of its own."""

    def test_cron_delivers_to_an_address(self, home: Path, provider: ScriptedProviderProcess, mail: FakeMail) -> None:
        provider.reset()
        daemon = _start(home, provider, mail)
        try:
            wait_connected(home, "email")
            provider.push({"text": "The nightly digest."})
            job = json.loads(run_cli(home, "cron", "add", "--schedule", "every 1d", "--prompt", "Digest.",
                                     "--name", "nightly", "--deliver", f"email:{OWNER}", "--json").stdout)["jobs"][0]
            assert run_cli(home, "cron", "run-now", job["id"]).returncode == 0
            [sent] = _mails(mail, 1)
            assert sent.text == "Cron job 'nightly':\n\nThe nightly digest." and sent.message["Subject"] == "Cron job 'nightly':"
            assert sent.message["In-Reply-To"] is None
            refused = run_cli(home, "cron", "add", "--schedule", "every 1d", "--prompt", "x", "--deliver", "email:nobody")
            assert refused.returncode != 0 and "email" in refused.stderr
        finally:
            daemon.stop()
