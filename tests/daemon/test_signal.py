"""The Signal bot in a real daemon, against a fake signal-cli daemon (its HTTP endpoint on loopback):
pairing, direct chats and groups with mentions and replies, Markdown as Signal's text styles, reactions
as acknowledgements, an approval answered by a reply, a long answer split at 8,000 characters after a
rate limit waited out, a dropped event stream resumed without losing or repeating a message, a cron
delivery, files both ways, and bad input and an unknown account survived."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from actors.platform.daemon.logs import mask_phone_numbers
from tests.daemon.helpers import DaemonProcess, ScriptedProviderProcess, run_cli
from tests.daemon.platform_helpers import bot_details, pairing, user_texts, wait_connected
from tests.daemon.telegram_daemon import wait
from tests.platform.signal_fake import ACCOUNT, FakeSignal

OWNER, COLLEAGUE, STRANGER = "+15551110001", "+15551110002", "+15551110003"
GROUP = base64.b64encode(b"g" * 32).decode()


def _start(home: Path, provider: ScriptedProviderProcess, fake: FakeSignal, env: dict[str, str] | None = None, **section: Any) -> DaemonProcess:
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    config = {"enabled": True, "allow_from": [OWNER, COLLEAGUE], "retry_first_seconds": 0.05, **section}
    (home / "config.yaml").write_text(json.dumps({
        "model": {"default": "scripted-model", "provider": "custom", "base_url": provider.base_url},
        "platforms": {"signal": config},
    }))
    daemon = DaemonProcess(home)
    daemon.extra_env = {"SIGNAL_HTTP_URL": fake.url, "SIGNAL_ACCOUNT": ACCOUNT, **(env or {})}
    return daemon.start()


def _details(home: Path) -> dict[str, Any]:
    return bot_details(home, "signal")


class TestConversations:
    """A stranger pairs; a direct chat is answered to its sender with Markdown as text styles; a group
    answers a mention or a reply to the bot (require_mention on), not its chatter; 👀 then ✅."""

    def test_pairing_direct_chats_and_groups(self, home: Path, provider: ScriptedProviderProcess, signal: FakeSignal) -> None:
        provider.reset()
        # Hermes's SIGNAL_GROUP_ALLOWED_USERS lists groups (by their bare ids): every member of one may talk.
        daemon = _start(home, provider, signal, {"SIGNAL_GROUP_ALLOWED_USERS": GROUP}, allow_from=[OWNER], dm_policy="pairing",
                        require_mention=True)
        try:
            wait_connected(home, "signal")
            signal.push_message(STRANGER, "let me in")
            [code_text] = signal.wait_for_texts(STRANGER, 1)
            [waiting] = pairing(home, "list")["pending"]
            assert waiting["user_id"] == STRANGER and waiting["code"] in code_text
            pairing(home, "approve", waiting["code"])
            assert "approved your pairing code" in signal.wait_for_texts(STRANGER, 2)[1]
            provider.push({"text": "Hello **there**, see `code`."}, {"text": "In the group."}, {"text": "Replied."})
            asked = signal.push_message(STRANGER, "hi bot")
            signal.wait_for_texts(STRANGER, 3)
            [answer] = [s for s in signal.sends() if s.get("message") == "Hello there, see code."]
            assert answer["textStyle"] == ["6:5:BOLD", "17:4:MONOSPACE"] and answer["recipient"] == [STRANGER]
            assert "Signal" in provider.requests()[-1]["body"]["messages"][0]["content"]  # the platform hint
            signal.wait_until(lambda: [r["emoji"] for r in signal.reactions if r["targetTimestamp"] == asked] == ["👀", "✅"], "👀 then ✅")
            assert signal.reactions[-1]["targetAuthor"] == STRANGER and signal.reactions[-1]["recipient"] == [STRANGER]
            signal.push_message(COLLEAGUE, "talking among ourselves", group=GROUP)
            signal.push_message(COLLEAGUE, "what do you think?", group=GROUP, mention=True)
            assert signal.wait_for_texts(f"group:{GROUP}", 1) == ["In the group."]
            [sent] = [s for s in signal.sends() if s.get("groupId") == GROUP]
            assert "recipient" not in sent
            signal.push_message(COLLEAGUE, "and then?", group=GROUP, quote=sent["sent_at"])  # a reply to the bot
            assert signal.wait_for_texts(f"group:{GROUP}", 2)[1] == "Replied."
            assert user_texts(provider) == ["hi bot", "what do you think?", "and then?"]
            details = _details(home)
            assert details["ignored"] == 1 and details["refused"] == 1 and details["streams"] == 1, details
            statuses = json.loads(run_cli(home, "status", "--json").stdout)["platforms"]
            [status] = [s for s in statuses if s["name"] == "signal"]
            assert status["connection"] == "connected" and status["chats"] >= 2, status
        finally:
            daemon.stop()



    def test_note_to_self(self, home: Path, provider: ScriptedProviderProcess, signal: FakeSignal) -> None:
        """Linked to its owner's own number, the bot answers the owner's Note to Self there."""
        provider.reset()
        daemon = _start(home, provider, signal, allow_from=[ACCOUNT], reactions=False, tool_progress=False)
        try:
            wait_connected(home, "signal")
            provider.push({"text": "Noted."})
            signal.push_note_to_self("remind me to water the plants")
            assert signal.wait_for_texts(ACCOUNT, 1) == ["Noted."]
            provider.push({"text": "Done."})
            [answer] = [s for s in signal.sends() if s.get("message") == "Noted."]
            wait(lambda: _details(home)["sent"] == 1, "the bot to take the send's answer")  # the echo must come after it
            signal.push_note_to_self("Noted.", timestamp=answer["sent_at"])  # the bot's own answer, echoed: not a question
            signal.push_note_to_self("and the cat")
            assert signal.wait_for_texts(ACCOUNT, 2) == ["Noted.", "Done."]
            assert user_texts(provider) == ["remind me to water the plants", "and the cat"]
        finally:
            daemon.stop()

class TestApprovals:
    """An approval lists its choices and is answered by a reply, which the desk takes as a button press (and
    refuses from anyone but the conversation's owner)."""

    def test_an_approval_answered_by_reply(
        self, home: Path, provider: ScriptedProviderProcess, signal: FakeSignal, tmp_path: Path
    ) -> None:
        provider.reset()
        daemon = _start(home, provider, signal, sandbox="full-access", tool_progress=False)
        target = tmp_path / "victim"  # a directory of the test's own: the command removes nothing else
        target.mkdir()
        try:
            wait_connected(home, "signal")
            provider.push(
                {"tool_calls": [{"id": "rm1", "name": "terminal", "arguments": {"command": f"rm -r {target}"}}]},
                {"text": "Removed it."},
            )
            signal.push_message(OWNER, "remove that directory", group=GROUP)
            chat = f"group:{GROUP}"
            signal.wait_until(lambda: any("Approval needed" in t for t in signal.texts_to(chat)), "the approval")
            question = next(t for t in signal.texts_to(chat) if "Approval needed" in t)
            assert "1. Allow once" in question and "4. Deny" in question and "Reply approve" in question
            signal.push_message(COLLEAGUE, "approve", group=GROUP)  # allowed to talk, but the desk says not the owner
            signal.wait_until(lambda: any("Only the user who started" in t for t in signal.texts_to(chat)), "the refusal")
            assert target.exists()
            signal.push_message(OWNER, "approve", group=GROUP)
            signal.wait_until(lambda: "Removed it." in signal.texts_to(chat), "the turn's answer")
            assert not target.exists()
            asked = next(s["sent_at"] for s in signal.sends() if "Approval needed" in s["message"])
            signal.wait_until(lambda: any(s.get("editTimestamp") == asked and f"→ once (signal user {OWNER})" in s["message"]
                                          for s in signal.sends()), "the question marked answered, in place")
            assert "Allow once" in signal.texts_to(chat)  # the reply's notice
            assert user_texts(provider) == ["remove that directory"]  # the reply answered, not asked
        finally:
            daemon.stop()


class TestLimits:
    """A long answer is split at 8,000 characters; a rate limit (-5) is waited out as signal-cli says."""

    def test_a_long_answer_split_after_a_rate_limit(self, home: Path, provider: ScriptedProviderProcess, signal: FakeSignal) -> None:
        provider.reset()
        daemon = _start(home, provider, signal, tool_progress=False, reactions=False)
        try:
            wait_connected(home, "signal")
            signal.fail_next("send", {"code": -5, "message": "Failed to send message due to rate limiting",
                                      "data": {"response": {"timestamp": 1, "results": [
                                          {"recipientAddress": {"number": OWNER}, "type": "RATE_LIMIT_FAILURE", "retryAfterSeconds": 0.3}]}}})
            provider.push({"text": "\n\n".join(f"Paragraph {i}: " + "words " * 100 for i in range(30))})
            signal.push_message(OWNER, "write a lot")
            signal.wait_until(lambda: any("Paragraph 29" in t for t in signal.texts_to(OWNER)), "the whole answer")
            pieces = signal.texts_to(OWNER)
            assert len(pieces) == 3 and all(len(piece) <= 8_000 for piece in pieces)
            assert pieces[0].startswith("Paragraph 0:") and "".join(pieces).count("Paragraph") == 30
            assert signal.rate_limited == 1
            details = _details(home)
            assert details["rate_limited"] == 1 and details["rate_limited_seconds"] > 0.2
        finally:
            daemon.stop()


class TestConnection:
    """A dropped event stream is resumed with Last-Event-ID, the messages sent meanwhile handled once each;
    a restarted signal-cli's replay is not answered twice, nor a restarted daemon's; bad events and an unknown
    account leave the daemon serving."""

    def test_a_dropped_stream_is_resumed(self, home: Path, provider: ScriptedProviderProcess, signal: FakeSignal) -> None:
        provider.reset()
        daemon = _start(home, provider, signal, busy_input_mode="queue", reactions=False)
        try:
            wait_connected(home, "signal")
            provider.push({"text": "The first answer."}, {"text": "The second answer."}, {"text": "The third answer."})
            signal.push_message(OWNER, "hello")
            signal.wait_for_texts(OWNER, 1)
            signal.drop()
            signal.push_message(OWNER, "and then?")  # sent while the bot is away: sent again on resuming
            assert signal.wait_for_texts(OWNER, 2) == ["The first answer.", "The second answer."]
            assert signal.last_event_ids[0] is None and signal.last_event_ids[1] is not None
            signal.restart()  # a new run of signal-cli: the old id is unknown, every kept event comes again
            signal.push_message(OWNER, "still there?")
            assert signal.wait_for_texts(OWNER, 3)[2] == "The third answer."
            assert user_texts(provider) == ["hello", "and then?", "still there?"]  # each once
            details = _details(home)
            assert details["streams"] == 3 and details["connection"] == "connected", details
            daemon.stop()
            signal.push_message(OWNER, "are you back?")  # signal-cli takes it while our daemon is down
            provider.push({"text": "Back."})
            daemon = _start(home, provider, signal, busy_input_mode="queue", reactions=False)
            assert signal.wait_for_texts(OWNER, 4)[3] == "Back."  # the kept event id asked for what came meanwhile
            assert signal.last_event_ids[-1] is not None
            assert user_texts(provider) == ["hello", "and then?", "still there?", "are you back?"]
        finally:
            daemon.stop()

    def test_bad_input_is_skipped(self, home: Path, provider: ScriptedProviderProcess, signal: FakeSignal) -> None:
        """Events that are not what signal-cli writes are logged and skipped, quiet ones are not answered, and
        an account signal-cli no longer has stops the bot, named in status."""
        provider.reset()
        daemon = _start(home, provider, signal)
        try:
            wait_connected(home, "signal")
            signal.push_data("not json at all")
            signal.push_data(json.dumps(["a", "list"]))
            signal.push_data(json.dumps({"envelope": {"sourceNumber": OWNER}}))  # no timestamp
            signal.push_envelope({"sourceNumber": OWNER, "timestamp": 5, "typingMessage": {"action": "STARTED", "timestamp": 5}})
            signal.push_envelope({"sourceNumber": OWNER, "timestamp": 6, "receiptMessage": {"isRead": True, "timestamps": [1]}})
            signal.push_envelope({"sourceNumber": OWNER, "timestamp": 7, "dataMessage": {"timestamp": 7, "message": None}})
            signal.push_envelope({"sourceNumber": OWNER, "timestamp": 8, "dataMessage": {"message": "someone else's"}}, account="+15550000002")
            signal.push_message(STRANGER, "who are you?")  # an unknown user: refused, logged
            signal.push_message(OWNER, "x" * 9_000)  # more than a message holds here: cut, and said so
            provider.push({"text": "Still fine."})
            assert signal.wait_for_texts(OWNER, 1) == ["Still fine."]
            details = _details(home)
            assert details["connection"] == "connected" and details["malformed"] == 3 and details["refused"] == 1, details
            assert details["skipped"] == 4 and signal.streams == 1 and len(provider.requests()) == 1
            [text] = user_texts(provider)
            assert text.startswith("x" * 8_000 + "\n\n[The message was longer than 8,000 characters")
            log = daemon.log()
            assert "not as signal-cli writes it" in log and f"refused a message from user {mask_phone_numbers(STRANGER)}" in log and STRANGER not in log and "over 8000; cut" in log
            signal.forget_account()  # signal-cli no longer has the account: the bot stays off, the daemon serving
            wait(lambda: _details(home).get("connection") == "failed", "the unknown account noticed")
            assert "does not know the account" in str(_details(home)["connection_error"])
            assert run_cli(home, "status").returncode == 0
        finally:
            daemon.stop()
        assert "stays off until the token is fixed" in daemon.log()


class TestDelivery:
    """A cron job delivers to a number or a group; a reply's file goes as an attachment, a user's is fetched."""

    def test_cron_and_files(self, home: Path, provider: ScriptedProviderProcess, signal: FakeSignal, tmp_path: Path) -> None:
        provider.reset()
        workspace = tmp_path / "work"
        workspace.mkdir()
        (workspace / "report.txt").write_bytes(b"the report's bytes")
        signal.attachments["att1"] = b"a,b\n1,2\n"
        daemon = _start(home, provider, signal, cwd=str(workspace))
        try:
            wait_connected(home, "signal")
            provider.push({"text": "The nightly digest."}, {"text": "The group's digest."})
            for name, target in (("nightly", f"signal:{OWNER}"), ("group", f"signal:group:{GROUP}")):
                job = json.loads(run_cli(home, "cron", "add", "--schedule", "every 1d", "--prompt", "Digest.",
                                         "--name", name, "--deliver", target, "--json").stdout)["jobs"][0]
                assert run_cli(home, "cron", "run-now", job["id"]).returncode == 0
            assert signal.wait_for_texts(OWNER, 1) == ["Cron job 'nightly':\n\nThe nightly digest."]
            assert signal.wait_for_texts(f"group:{GROUP}", 1) == ["Cron job 'group':\n\nThe group's digest."]
            refused = run_cli(home, "cron", "add", "--schedule", "every 1d", "--prompt", "x", "--deliver", "signal:bob")
            assert refused.returncode != 0 and "signal" in refused.stderr
            provider.push({"text": f"Here it is.\nMEDIA:{workspace}/report.txt"})
            signal.push_message(OWNER, "look at this", attachments=[{"id": "att1", "contentType": "text/csv", "filename": "data.csv", "size": 8}])
            signal.wait_until(lambda: any(s.get("attachments") for s in signal.sends()), "the reply's file")
            [with_file] = [s for s in signal.sends() if s.get("attachments")]
            assert with_file["recipient"] == [OWNER] and with_file["attached"] == [b"the report's bytes"]
            assert "Here it is." in signal.texts_to(OWNER)
            text = user_texts(provider)[-1]
            [saved] = (workspace / "incoming").iterdir()
            assert saved.name.endswith("-data.csv") and saved.read_bytes() == b"a,b\n1,2\n" and str(saved) in text
        finally:
            daemon.stop()
