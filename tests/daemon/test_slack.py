"""The Slack app in a real daemon, against the fake Slack (Web API and Socket Mode on loopback): pairing,
DMs and channel threads, an approval by Block Kit button that only the conversation's owner may press,
a long answer split at Slack's limit, a 429 waited out, a dropped socket resumed without losing an
envelope, a cron delivery to a channel by name with a file, and bad input and a refused token survived."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.daemon.helpers import DaemonProcess, ScriptedProviderProcess, run_cli
from tests.daemon.platform_helpers import bot_details
from tests.daemon.telegram_daemon import wait
from tests.platform.slack_fake import APP_TOKEN, BOT_ID, BOT_TOKEN, CHANNELS, FakeSlack

OWNER, COLLEAGUE, STRANGER = "UOWNER0001", "UCOLLEAG01", "USTRANGE01"
DM, STRANGER_DM, CHANNEL = "DOWNER0001", "DSTRANGE01", "C0WORKING1"


def _start(home: Path, provider: ScriptedProviderProcess, fake: FakeSlack, *, bot_token: str = BOT_TOKEN, **slack: Any) -> DaemonProcess:
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    section = {"enabled": True, "api_url": fake.api_url, "allow_from": [OWNER, COLLEAGUE], **slack}
    (home / "config.yaml").write_text(json.dumps({
        "model": {"default": "scripted-model", "provider": "custom", "base_url": provider.base_url},
        "platforms": {"slack": section},
    }))
    daemon = DaemonProcess(home)
    daemon.extra_env = {"SLACK_BOT_TOKEN": bot_token, "SLACK_APP_TOKEN": APP_TOKEN}
    return daemon.start()


def _details(home: Path) -> dict[str, Any]:
    return bot_details(home, "slack")


def _connected(home: Path) -> None:
    wait(lambda: _details(home).get("connection") == "connected", "the app to connect")


def _user_texts(provider: ScriptedProviderProcess) -> list[str]:
    return [r["body"]["messages"][-1]["content"] for r in provider.requests() if r["body"]["messages"][-1]["role"] == "user"]


def _pairing(home: Path, *args: str) -> dict[str, Any]:
    result = run_cli(home, "pairing", *args, "--json")
    assert result.returncode == 0, result.stderr
    return dict(json.loads(result.stdout))


class TestConversations:
    """A stranger pairs; a DM is answered in the DM, a channel mention in a thread under it, and the
    thread's next messages without a mention; the answer is mrkdwn; status shows the app."""

    def test_pairing_dm_and_channel_threads(self, home: Path, provider: ScriptedProviderProcess, slack: FakeSlack) -> None:
        provider.reset()
        daemon = _start(home, provider, slack, allow_from=[OWNER], dm_policy="pairing")
        try:
            _connected(home)
            slack.push_message(STRANGER_DM, STRANGER, "let me in")
            [code_text] = slack.wait_for_texts(STRANGER_DM, 1)
            [waiting] = _pairing(home, "list")["pending"]
            assert waiting["user_id"] == STRANGER and waiting["code"] in code_text
            _pairing(home, "approve", waiting["code"])
            assert "approved your pairing code" in slack.wait_for_texts(STRANGER_DM, 2)[1]
            provider.push({"text": "Hello **there**, see [the docs](https://example.com/a?b=1) & <more>."},
                          {"text": "In the thread."}, {"text": "Still in the thread."})
            slack.push_message(STRANGER_DM, STRANGER, "hi bot")
            assert slack.wait_for_texts(STRANGER_DM, 3)[2] == "Hello *there*, see <https://example.com/a?b=1|the docs> &amp; &lt;more&gt;."
            assert "Slack" in provider.requests()[-1]["body"]["messages"][0]["content"]  # the platform hint
            slack.push_message(CHANNEL, OWNER, "talking among ourselves")
            asked = slack.push_message(CHANNEL, OWNER, "what do you think?", mention=True)
            slack.wait_for_texts(CHANNEL, 1)
            [answer] = slack.posts_to(CHANNEL)
            assert answer["text"] == "In the thread." and answer["thread_ts"] == asked  # under the user's message
            slack.push_message(CHANNEL, OWNER, "and more?", thread_ts=asked)  # no mention needed in the thread
            assert slack.wait_for_texts(CHANNEL, 2)[1] == "Still in the thread."
            assert slack.posts_to(CHANNEL)[1]["thread_ts"] == asked
            assert _user_texts(provider) == ["hi bot", "what do you think?", "and more?"]
            details = _details(home)
            assert details["ignored"] == 1 and details["refused"] == 1 and details["socket_connections"] == 1, details
            [status] = json.loads(run_cli(home, "status", "--json").stdout)["platforms"]
            assert status["name"] == "slack" and status["connection"] == "connected" and status["chats"] >= 2, status
            wait(lambda: {("add", asked, "white_check_mark"), ("remove", asked, "eyes")} <= set(slack.reactions), "the answered mark")
            assert slack.reactions.index(("add", asked, "eyes")) < slack.reactions.index(("remove", asked, "eyes"))
        finally:
            daemon.stop()
        log = daemon.log()
        assert BOT_TOKEN not in log and APP_TOKEN not in log

    def test_slash_commands(self, home: Path, provider: ScriptedProviderProcess, slack: FakeSlack) -> None:
        """``/hermes status`` and ``/new`` act as the desk's commands; ``/hermes <words>`` is a message."""
        provider.reset()
        daemon = _start(home, provider, slack)
        try:
            _connected(home)
            slack.push_command(DM, OWNER, "/hermes", "status")
            assert "No conversation yet" in slack.wait_for_texts(DM, 1)[0]
            provider.push({"text": "Answered a command."})
            slack.push_command(DM, OWNER, "/hermes", "what time is it?")
            assert slack.wait_for_texts(DM, 2)[1] == "Answered a command."
            slack.push_command(DM, OWNER, "/new")
            assert slack.wait_for_texts(DM, 3)[2] == "Started a new conversation."
            assert _user_texts(provider) == ["what time is it?"]
        finally:
            daemon.stop()


class TestApprovals:
    """An approval is a row of Block Kit buttons; another user's press is refused, the owner's answers it."""

    def test_an_approval_answered_by_button(
        self, home: Path, provider: ScriptedProviderProcess, slack: FakeSlack, tmp_path: Path
    ) -> None:
        provider.reset()
        daemon = _start(home, provider, slack, sandbox="full-access")
        target = tmp_path / "victim"
        target.mkdir()
        try:
            _connected(home)
            provider.push(
                {"tool_calls": [{"id": "rm1", "name": "terminal", "arguments": {"command": f"rm -r {target}"}}]},
                {"text": "Removed it."},
            )
            asked = slack.push_message(CHANNEL, OWNER, "remove that directory", mention=True)
            slack.wait_until(lambda: any(m.get("blocks") for m in slack.sent), "the approval's buttons")
            question = next(m for m in slack.sent if m.get("blocks"))
            assert question["thread_ts"] == asked
            [section, actions] = question["blocks"]
            assert section["type"] == "section" and "Approval needed" in section["text"]["text"]
            buttons = {b["text"]["text"]: b["value"] for b in actions["elements"]}
            assert list(buttons) == ["Allow once", "Allow for this session", "Always allow", "Deny"]
            slack.push_press(CHANNEL, COLLEAGUE, buttons["Allow once"], thread_ts=asked)  # allowed, but not the owner
            slack.wait_until(lambda: len(slack.ephemerals) == 1, "the refusal")
            assert slack.ephemerals[0]["user"] == COLLEAGUE and "Only the user who started" in slack.ephemerals[0]["text"]
            assert target.exists()
            slack.push_press(CHANNEL, OWNER, buttons["Allow once"], thread_ts=asked)
            slack.wait_until(lambda: "Removed it." in slack.texts_to(CHANNEL), "the turn's answer")
            assert not target.exists()
            assert slack.ephemerals[1] == {"channel": CHANNEL, "user": OWNER, "text": "Allow once", "thread_ts": asked}
            slack.wait_until(lambda: any(e["blocks"] == [] and "→ once" in e["text"] for e in slack.edits), "the buttons removed")
            assert _details(home)["answers_refused"] == 1
        finally:
            daemon.stop()


    def test_clarify_questions_answered_by_button_and_in_the_thread(
        self, home: Path, provider: ScriptedProviderProcess, slack: FakeSlack
    ) -> None:
        """A question with choices is a row of buttons; without, the next message in the thread answers it."""
        provider.reset()
        daemon = _start(home, provider, slack, tool_progress=False)
        try:
            _connected(home)
            provider.push(
                {"tool_calls": [{"id": "ask1", "name": "clarify", "arguments": {"question": "Which colour?", "choices": ["red", "green"]}}]},
                {"tool_calls": [{"id": "ask2", "name": "clarify", "arguments": {"question": "And the shade?"}}]},
                {"text": "Green, dark."},
            )
            asked = slack.push_message(CHANNEL, OWNER, "paint it", mention=True)
            slack.wait_until(lambda: any(m.get("blocks") for m in slack.sent), "the question's buttons")
            buttons = {b["text"]["text"]: b["value"] for b in next(m for m in slack.sent if m.get("blocks"))["blocks"][1]["elements"]}
            assert list(buttons) == ["red", "green"]
            slack.push_press(CHANNEL, OWNER, buttons["green"], thread_ts=asked)
            slack.wait_until(lambda: any("And the shade?" in t for t in slack.texts_to(CHANNEL)), "the second question")
            slack.push_message(CHANNEL, OWNER, "dark", thread_ts=asked)
            slack.wait_until(lambda: "Green, dark." in slack.texts_to(CHANNEL), "the answer")
            results = [m["content"] for m in provider.requests()[-1]["body"]["messages"] if m["role"] == "tool"]
            assert "green" in results[0] and "dark" in results[1]
            assert _user_texts(provider) == ["paint it"]  # the answer reached the question, not the model as a message
        finally:
            daemon.stop()


class TestLimits:
    """A long answer is split at Slack's 40,000 characters; a 429 is waited out as Retry-After says."""

    def test_a_long_answer_split_after_a_429(self, home: Path, provider: ScriptedProviderProcess, slack: FakeSlack) -> None:
        provider.reset()
        daemon = _start(home, provider, slack, tool_progress=False, reactions=False)
        try:
            _connected(home)
            slack.fail_next_post(429, {"ok": False, "error": "ratelimited"}, {"Retry-After": "0.3"})
            provider.push({"text": "\n\n".join(f"Paragraph {i}: " + "words " * 100 for i in range(100))})
            slack.push_message(DM, OWNER, "write a lot")
            slack.wait_until(lambda: any("Paragraph 99" in t for t in slack.texts_to(DM)), "the whole answer")
            pieces = slack.texts_to(DM)
            assert len(pieces) == 2 and all(len(piece) <= 40_000 for piece in pieces)
            assert pieces[0].startswith("Paragraph 0:") and pieces[1].startswith("Paragraph ")
            assert slack.rate_limited == 1
            details = _details(home)
            assert details["rate_limited"] == 1 and details["rate_limited_seconds"] > 0.2
        finally:
            daemon.stop()


class TestConnection:
    """A dropped socket is opened again and the envelopes sent meanwhile arrive, each handled once; a
    ``disconnect`` is obeyed; bad frames and a refused token leave the daemon serving."""

    def test_a_dropped_socket_is_resumed_mid_turn(self, home: Path, provider: ScriptedProviderProcess, slack: FakeSlack) -> None:
        provider.reset()
        daemon = _start(home, provider, slack, busy_input_mode="queue")
        try:
            _connected(home)
            provider.push({"text": "The slow answer.", "delay_first_byte": 1.0}, {"text": "The second answer."}, {"text": "Still here."})
            slack.push_message(DM, OWNER, "think hard")
            wait(lambda: len(provider.requests()) == 1, "the turn to start")
            slack.drop()
            slack.push_message(DM, OWNER, "and then?")  # sent while the app is away: delivered on the next connection
            assert slack.wait_for_texts(DM, 2) == ["The slow answer.", "The second answer."]
            assert _user_texts(provider) == ["think hard", "and then?"]  # each once
            assert slack.hellos == 2 and not slack.unacked
            slack.ask_disconnect()
            wait(lambda: slack.hellos == 3 and _details(home).get("connection") == "connected", "the asked reconnect")
            slack.push_message(DM, OWNER, "still there?")
            assert slack.wait_for_texts(DM, 3)[2] == "Still here."
            assert _details(home)["disconnects"] == 1
        finally:
            daemon.stop()

    def test_bad_input_is_skipped(self, home: Path, provider: ScriptedProviderProcess, slack: FakeSlack) -> None:
        """Frames and payloads that are not what Slack documents are logged and skipped; the socket goes on."""
        provider.reset()
        daemon = _start(home, provider, slack)
        try:
            _connected(home)
            slack.push_frame("not json at all")
            slack.push_frame(json.dumps(["a", "list"]))
            slack.push_frame(json.dumps({"type": "events_api", "payload": {"event": {}}}))  # no envelope id
            slack.push_envelope("events_api", {"event": {"type": "message", "channel": DM, "user": ["x"], "text": 3, "ts": "1.1"}})
            slack.push_envelope("events_api", {"event": "nothing"})
            slack.push_envelope("interactive", {"type": "block_actions", "user": {"id": OWNER}, "actions": "none"})
            slack.push_envelope("slash_commands", {"command": "/hermes", "text": "hi"})
            slack.push_message(DM, STRANGER, "who are you?")  # an unknown user: refused, logged
            slack.push_message(DM, OWNER, "x" * 50_000)  # more than Slack sends: cut at its limit, and said so
            provider.push({"text": "Still fine."})
            slack.wait_for_texts(DM, 1)
            assert slack.texts_to(DM) == ["Still fine."]
            details = _details(home)
            assert details["connection"] == "connected" and details["malformed"] == 7 and details["refused"] == 1, details
            assert slack.hellos == 1 and len(provider.requests()) == 1
            [text] = _user_texts(provider)
            assert text.startswith("x" * 40_000 + "\n\n[The message was longer than Slack's 40,000 characters")
            log = daemon.log()
            assert "not an envelope" in log and "refused a message from user USTRANGE01" in log and "over Slack's 40000; cut" in log
        finally:
            daemon.stop()

    def test_a_token_revoked_while_connected(self, home: Path, provider: ScriptedProviderProcess, slack: FakeSlack) -> None:
        """Slack says the tokens were revoked: the app reports it, checks the token on its next connection
        and, refused, stays off with the daemon serving."""
        daemon = _start(home, provider, slack)
        try:
            _connected(home)
            slack.revoke()
            slack.push_envelope("events_api", {"type": "event_callback", "event": {"type": "tokens_revoked", "tokens": {"bot": [BOT_ID]}}})
            wait(lambda: _details(home).get("connection_error") == "slack: tokens_revoked", "the revocation noticed")
            slack.drop()
            wait(lambda: "token_revoked" in str(_details(home).get("connection_error")), "the refused token on reconnecting")
            assert _details(home)["connection"] == "failed" and slack.hellos == 1
            assert run_cli(home, "status").returncode == 0
        finally:
            daemon.stop()

    def test_a_refused_token_is_a_failed_state(self, home: Path, provider: ScriptedProviderProcess, slack: FakeSlack) -> None:
        daemon = _start(home, provider, slack, bot_token="xoxb-revoked-token")
        try:
            wait(lambda: _details(home).get("connection") == "failed", "the app to report the refused token")
            assert "invalid_auth" in str(_details(home)["connection_error"])
            assert run_cli(home, "status").returncode == 0
            assert slack.hellos == 0
        finally:
            daemon.stop()
        assert "xoxb-revoked-token" not in daemon.log()


class TestDelivery:
    """A cron job delivers to a channel named ``#general``; files go both ways (a user's fetched with the
    bot token, a reply's uploaded into the thread)."""

    def test_cron_delivers_to_a_channel_by_name(self, home: Path, provider: ScriptedProviderProcess, slack: FakeSlack) -> None:
        provider.reset()
        daemon = _start(home, provider, slack)
        try:
            _connected(home)
            provider.push({"text": "The nightly digest."})
            job = json.loads(run_cli(home, "cron", "add", "--schedule", "every 1d", "--prompt", "Digest.",
                                     "--name", "nightly", "--deliver", "slack:#general", "--json").stdout)["jobs"][0]
            assert run_cli(home, "cron", "run-now", job["id"]).returncode == 0
            assert slack.wait_for_texts(CHANNELS["general"], 1) == ["Cron job 'nightly':\n\nThe nightly digest."]
            refused = run_cli(home, "cron", "add", "--schedule", "every 1d", "--prompt", "x", "--deliver", "slack:general")
            assert refused.returncode != 0 and "slack" in refused.stderr
        finally:
            daemon.stop()

    def test_files_both_ways(self, home: Path, provider: ScriptedProviderProcess, slack: FakeSlack, tmp_path: Path) -> None:
        provider.reset()
        workspace = tmp_path / "work"
        workspace.mkdir()
        (workspace / "report.txt").write_bytes(b"the report's bytes")
        slack.files["data.csv"] = b"a,b\n1,2\n"
        daemon = _start(home, provider, slack, cwd=str(workspace))
        try:
            _connected(home)
            provider.push({"text": f"Here it is.\nMEDIA:{workspace}/report.txt"})
            files = [
                {"id": "F1", "name": "data.csv", "mimetype": "text/csv", "size": 8, "url_private_download": f"{slack.base}/files/data.csv"},
                {"id": "F2", "name": "evil.txt", "mimetype": "text/plain", "size": 8, "url_private_download": "https://attacker.example/x"},
            ]
            asked = slack.push_message(CHANNEL, OWNER, "look at this", mention=True, subtype="file_share", files=files)
            slack.wait_until(lambda: slack.shared, "the reply's file")
            [shared] = slack.shared
            assert shared["channel_id"] == CHANNEL and shared["thread_ts"] == asked and shared["content"] == b"the report's bytes"
            assert slack.texts_to(CHANNEL) == ["Here it is."]
            [text] = _user_texts(provider)
            [saved] = (workspace / "incoming").iterdir()  # the address outside Slack was not fetched
            assert saved.name.endswith("-data.csv") and saved.read_bytes() == b"a,b\n1,2\n" and str(saved) in text
            assert "could not be fetched: download: not an address of Slack's files" in text
        finally:
            daemon.stop()
