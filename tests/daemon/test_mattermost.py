"""The Mattermost bot in a real daemon, against the fake Mattermost (REST and WebSocket on loopback):
pairing, DMs and channel threads, an approval answered by a reply that only the conversation's owner
may give, a long answer split at Mattermost's limit after a 429 waited out, a dropped socket resumed
without losing an event, a cron delivery, and bad input and a revoked token survived."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.daemon.helpers import DaemonProcess, ScriptedProviderProcess, run_cli
from tests.daemon.platform_helpers import bot_details, pairing, user_texts, wait_connected
from tests.daemon.telegram_daemon import wait
from tests.platform.mattermost_fake import TOKEN, FakeMattermost

OWNER, COLLEAGUE, STRANGER = "o" * 26, "c" * 26, "s" * 26
DM, STRANGER_DM, CHANNEL, HOME = "d" * 26, "e" * 26, "k" * 26, "h" * 26


def _start(home: Path, provider: ScriptedProviderProcess, fake: FakeMattermost, *, token: str = TOKEN, **section: Any) -> DaemonProcess:
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    config = {"enabled": True, "url": fake.url, "websocket_url": fake.socket_url, "allow_from": [OWNER, COLLEAGUE],
              "retry_first_seconds": 0.05, **section}
    (home / "config.yaml").write_text(json.dumps({
        "model": {"default": "scripted-model", "provider": "custom", "base_url": provider.base_url},
        "platforms": {"mattermost": config},
    }))
    daemon = DaemonProcess(home)
    daemon.extra_env = {"MATTERMOST_TOKEN": token}
    return daemon.start()


def _details(home: Path) -> dict[str, Any]:
    return bot_details(home, "mattermost")


class TestConversations:
    """A stranger pairs; a DM is answered in the DM, a channel mention in a thread under it (root_id), and
    the thread's next messages without a mention; Markdown goes as written; status shows the bot."""

    def test_pairing_dm_and_channel_threads(self, home: Path, provider: ScriptedProviderProcess, mattermost: FakeMattermost) -> None:
        provider.reset()
        daemon = _start(home, provider, mattermost, allow_from=[OWNER], dm_policy="pairing")
        try:
            wait_connected(home, "mattermost")
            assert mattermost.auth_tokens == [TOKEN]  # in the authentication frame, not the address
            mattermost.push_post(STRANGER_DM, STRANGER, "let me in", direct=True)
            [code_text] = mattermost.wait_for_texts(STRANGER_DM, 1)
            [waiting] = pairing(home, "list")["pending"]
            assert waiting["user_id"] == STRANGER and waiting["code"] in code_text
            pairing(home, "approve", waiting["code"])
            assert "approved your pairing code" in mattermost.wait_for_texts(STRANGER_DM, 2)[1]
            provider.push({"text": "Hello **there**, see [the docs](https://example.com/a?b=1).\n\n| a | b |\n|---|---|\n| 1 | 2 |"},
                          {"text": "In the thread."}, {"text": "Still in the thread."})
            mattermost.push_post(STRANGER_DM, STRANGER, "hi bot", direct=True)
            answer = mattermost.wait_for_texts(STRANGER_DM, 3)[2]
            assert answer == "Hello **there**, see [the docs](https://example.com/a?b=1).\n\n| a | b |\n|---|---|\n| 1 | 2 |"
            assert "Mattermost" in provider.requests()[-1]["body"]["messages"][0]["content"]  # the platform hint
            mattermost.push_post(CHANNEL, OWNER, "talking among ourselves")
            asked = mattermost.push_post(CHANNEL, OWNER, "what do you think?", mention=True)
            mattermost.wait_for_texts(CHANNEL, 1)
            [posted] = mattermost.posts_to(CHANNEL)
            assert posted["message"] == "In the thread." and posted["root_id"] == asked  # under the user's post
            mattermost.push_post(CHANNEL, OWNER, "and more?", root_id=asked)  # no mention needed in the thread
            assert mattermost.wait_for_texts(CHANNEL, 2)[1] == "Still in the thread."
            assert mattermost.posts_to(CHANNEL)[1]["root_id"] == asked
            assert user_texts(provider) == ["hi bot", "what do you think?", "and more?"]
            details = _details(home)
            assert details["ignored"] == 1 and details["refused"] == 1 and details["socket_connections"] == 1, details
            statuses = json.loads(run_cli(home, "status", "--json").stdout)["platforms"]
            [status] = [s for s in statuses if s["name"] == "mattermost"]
            assert status["connection"] == "connected" and status["chats"] >= 2, status
            wait(lambda: {("add", asked, "white_check_mark"), ("remove", asked, "eyes")} <= set(mattermost.reactions), "the answered mark")
        finally:
            daemon.stop()
        assert TOKEN not in daemon.log()


class TestApprovals:
    """An approval or a question lists its choices and is answered by a reply in the thread, the owner's alone."""

    def test_an_approval_answered_by_reply(
        self, home: Path, provider: ScriptedProviderProcess, mattermost: FakeMattermost, tmp_path: Path
    ) -> None:
        provider.reset()
        daemon = _start(home, provider, mattermost, sandbox="full-access")
        target = tmp_path / "victim"  # a directory of the test's own: the command removes nothing else
        target.mkdir()
        try:
            wait_connected(home, "mattermost")
            provider.push(
                {"tool_calls": [{"id": "rm1", "name": "terminal", "arguments": {"command": f"rm -r {target}"}}]},
                {"text": "Removed it."},
            )
            asked = mattermost.push_post(CHANNEL, OWNER, "remove that directory", mention=True)
            mattermost.wait_until(lambda: any("Approval needed" in t for t in mattermost.texts_to(CHANNEL)), "the approval")
            question = next(p for p in mattermost.posts_to(CHANNEL) if "Approval needed" in p["message"])
            assert question["root_id"] == asked and "1. Allow once" in question["message"] and "4. Deny" in question["message"]
            mattermost.push_post(CHANNEL, COLLEAGUE, "approve", root_id=asked)  # allowed to talk, but not the owner
            mattermost.push_post(CHANNEL, COLLEAGUE, "/approve", root_id=asked)  # nor by the desk's command
            mattermost.wait_until(lambda: sum("Only the user who started" in t for t in mattermost.texts_to(CHANNEL)) == 2, "the refusals")
            assert target.exists()
            mattermost.push_post(CHANNEL, OWNER, "approve", root_id=asked)
            mattermost.wait_until(lambda: "Removed it." in mattermost.texts_to(CHANNEL), "the turn's answer")
            assert not target.exists()
            assert _details(home)["answers_refused"] == 2
            assert user_texts(provider) == ["remove that directory"]  # the replies answered, not asked
        finally:
            daemon.stop()


    def test_clarify_questions_answered_in_the_thread(self, home: Path, provider: ScriptedProviderProcess, mattermost: FakeMattermost) -> None:
        """A question with choices is answered by a choice's number; without, by the next message in the thread."""
        provider.reset()
        daemon = _start(home, provider, mattermost, tool_progress=False)
        try:
            wait_connected(home, "mattermost")
            provider.push(
                {"tool_calls": [{"id": "ask1", "name": "clarify", "arguments": {"question": "Which colour?", "choices": ["red", "green"]}}]},
                {"tool_calls": [{"id": "ask2", "name": "clarify", "arguments": {"question": "And the shade?"}}]},
                {"text": "Green, dark."},
            )
            asked = mattermost.push_post(CHANNEL, OWNER, "paint it", mention=True)
            mattermost.wait_until(lambda: any("Which colour?" in t for t in mattermost.texts_to(CHANNEL)), "the question")
            assert "1. red\n2. green" in next(t for t in mattermost.texts_to(CHANNEL) if "Which colour?" in t)
            mattermost.push_post(CHANNEL, OWNER, "2", root_id=asked)
            mattermost.wait_until(lambda: any("And the shade?" in t for t in mattermost.texts_to(CHANNEL)), "the second question")
            mattermost.push_post(CHANNEL, OWNER, "dark", root_id=asked)
            mattermost.wait_until(lambda: "Green, dark." in mattermost.texts_to(CHANNEL), "the answer")
            results = [m["content"] for m in provider.requests()[-1]["body"]["messages"] if m["role"] == "tool"]
            assert "green" in results[0] and "dark" in results[1]
            assert user_texts(provider) == ["paint it"]  # the replies reached the questions, not the model as messages
        finally:
            daemon.stop()


class TestLimits:
    """A long answer is split at Mattermost's 16,383 characters; a 429 is waited out as X-Ratelimit-Reset says."""

    def test_a_long_answer_split_after_a_429(self, home: Path, provider: ScriptedProviderProcess, mattermost: FakeMattermost) -> None:
        provider.reset()
        daemon = _start(home, provider, mattermost, tool_progress=False, reactions=False)
        try:
            wait_connected(home, "mattermost")
            mattermost.fail_next_post(429, {"id": "api.context.rate_limit", "status_code": 429}, {"X-Ratelimit-Reset": "0.3"})
            provider.push({"text": "\n\n".join(f"Paragraph {i}: " + "words " * 100 for i in range(60))})
            mattermost.push_post(DM, OWNER, "write a lot", direct=True)
            mattermost.wait_until(lambda: any("Paragraph 59" in t for t in mattermost.texts_to(DM)), "the whole answer")
            pieces = mattermost.texts_to(DM)
            assert len(pieces) == 3 and all(len(piece) <= 16_383 for piece in pieces)
            assert pieces[0].startswith("Paragraph 0:") and "".join(pieces).count("Paragraph") == 60
            assert mattermost.rate_limited == 1
            details = _details(home)
            assert details["rate_limited"] == 1 and details["rate_limited_seconds"] > 0.2
        finally:
            daemon.stop()


class TestConnection:
    """A dropped socket is resumed with its connection id and sequence number, the events sent meanwhile
    arriving once each; bad frames and a revoked token leave the daemon serving."""

    def test_a_dropped_socket_is_resumed(self, home: Path, provider: ScriptedProviderProcess, mattermost: FakeMattermost) -> None:
        provider.reset()
        daemon = _start(home, provider, mattermost, busy_input_mode="queue")
        try:
            wait_connected(home, "mattermost")
            provider.push({"text": "The first answer."}, {"text": "The second answer."})
            mattermost.push_post(DM, OWNER, "hello", direct=True)
            mattermost.wait_for_texts(DM, 1)
            mattermost.drop()
            mattermost.push_post(DM, OWNER, "and then?", direct=True)  # sent while the bot is away: sent again on resuming
            assert mattermost.wait_for_texts(DM, 2) == ["The first answer.", "The second answer."]
            assert user_texts(provider) == ["hello", "and then?"]  # each once
            assert mattermost.hellos == 2 and mattermost.resumes == 1
            details = _details(home)
            assert details["resumed"] == 1 and details["gaps"] == 0 and details["connection"] == "connected", details
        finally:
            daemon.stop()

    def test_bad_input_is_skipped(self, home: Path, provider: ScriptedProviderProcess, mattermost: FakeMattermost) -> None:
        """Frames and events that are not what Mattermost documents are logged and skipped; the socket goes on."""
        provider.reset()
        daemon = _start(home, provider, mattermost)
        try:
            wait_connected(home, "mattermost")
            mattermost.push_frame("not json at all")
            mattermost.push_frame(json.dumps(["a", "list"]))
            mattermost.push_frame(json.dumps({"event": "posted", "data": {}}))  # no seq
            mattermost.push_event("posted", {"channel_type": "D"})  # no post
            mattermost.push_event("posted", {"channel_type": "D", "post": "{not json"})
            mattermost.push_event("posted", {"channel_type": "D", "post": json.dumps({"id": 5, "user_id": OWNER})})
            mattermost.push_event("typing", {"parent_id": ""})  # not a post: nothing to answer
            mattermost.push_post(STRANGER_DM, STRANGER, "who are you?", direct=True)  # an unknown user: refused, logged
            mattermost.push_post(DM, OWNER, "x" * 20_000, direct=True)  # more than Mattermost keeps: cut, and said so
            provider.push({"text": "Still fine."})
            assert mattermost.wait_for_texts(DM, 1) == ["Still fine."]
            details = _details(home)
            assert details["connection"] == "connected" and details["malformed"] == 4 and details["refused"] == 1, details
            assert mattermost.hellos == 1 and len(provider.requests()) == 1
            [text] = user_texts(provider)
            assert text.startswith("x" * 16_383 + "\n\n[The message was longer than Mattermost's 16,383 characters")
            log = daemon.log()
            assert "not an event" in log and f"refused a message from user {STRANGER}" in log and "over Mattermost's 16383; cut" in log
        finally:
            daemon.stop()

    def test_a_revoked_token(self, home: Path, provider: ScriptedProviderProcess, mattermost: FakeMattermost) -> None:
        """The token is revoked while connected: the next connection is refused (401), the bot says so in
        status and stays off, the daemon serving."""
        daemon = _start(home, provider, mattermost)
        try:
            wait_connected(home, "mattermost")
            mattermost.revoke()
            mattermost.drop()
            wait(lambda: _details(home).get("connection") == "failed", "the revoked token noticed")
            assert "HTTP 401" in str(_details(home)["connection_error"])
            assert run_cli(home, "status").returncode == 0
        finally:
            daemon.stop()
        assert "stays off until the token is fixed" in daemon.log() and TOKEN not in daemon.log()


class TestDelivery:
    """A cron job delivers to a channel by its id; a reply's file goes up into the thread."""

    def test_cron_delivers_to_a_channel(self, home: Path, provider: ScriptedProviderProcess, mattermost: FakeMattermost) -> None:
        provider.reset()
        daemon = _start(home, provider, mattermost)
        try:
            wait_connected(home, "mattermost")
            provider.push({"text": "The nightly digest."})
            job = json.loads(run_cli(home, "cron", "add", "--schedule", "every 1d", "--prompt", "Digest.",
                                     "--name", "nightly", "--deliver", f"mattermost:{HOME}", "--json").stdout)["jobs"][0]
            assert run_cli(home, "cron", "run-now", job["id"]).returncode == 0
            assert mattermost.wait_for_texts(HOME, 1) == ["Cron job 'nightly':\n\nThe nightly digest."]
            refused = run_cli(home, "cron", "add", "--schedule", "every 1d", "--prompt", "x", "--deliver", "mattermost:#town-square")
            assert refused.returncode != 0 and "mattermost" in refused.stderr
        finally:
            daemon.stop()

    def test_files_both_ways(self, home: Path, provider: ScriptedProviderProcess, mattermost: FakeMattermost, tmp_path: Path) -> None:
        provider.reset()
        workspace = tmp_path / "work"
        workspace.mkdir()
        (workspace / "report.txt").write_bytes(b"the report's bytes")
        mattermost.files["f" * 26] = b"a,b\n1,2\n"
        daemon = _start(home, provider, mattermost, cwd=str(workspace))
        try:
            wait_connected(home, "mattermost")
            provider.push({"text": f"Here it is.\nMEDIA:{workspace}/report.txt"})
            metadata = {"files": [{"id": "f" * 26, "name": "data.csv", "mime_type": "text/csv", "size": 8}]}
            asked = mattermost.push_post(CHANNEL, OWNER, "look at this", mention=True, file_ids=["f" * 26], metadata=metadata)
            mattermost.wait_until(lambda: any(p.get("file_ids") for p in mattermost.sent), "the reply's file")
            [with_file] = [p for p in mattermost.posts_to(CHANNEL) if p.get("file_ids")]
            upload = mattermost.uploads[with_file["file_ids"][0]]
            assert with_file["root_id"] == asked and upload["content"] == b"the report's bytes" and upload["channel_id"] == CHANNEL
            assert "Here it is." in mattermost.texts_to(CHANNEL)
            [text] = user_texts(provider)
            [saved] = (workspace / "incoming").iterdir()
            assert saved.name.endswith("-data.csv") and saved.read_bytes() == b"a,b\n1,2\n" and str(saved) in text
        finally:
            daemon.stop()
