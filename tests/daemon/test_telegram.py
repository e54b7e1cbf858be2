"""The Telegram bot in a real daemon, against the fake Bot API: a conversation, a refused user, no
update handled twice across a restart, a 429 waited out, cron results delivered, and a token never logged."""

from __future__ import annotations

import json
from pathlib import Path

from markup import utf16_length
from actors.platform.telegram import telegram_session_id
from tests.daemon.helpers import DaemonProcess, ScriptedProviderProcess, inspect_json, run_cli
from tests.daemon.telegram_daemon import CHAT, OWNER, STRANGER, start_bot, wait
from tests.platform.telegram_fake import TOKEN, FakeTelegram


class TestTelegram:
    """A chat is a session; strangers are refused; offsets survive a restart."""

    def test_conversation_refusal_and_restart(self, home: Path, provider: ScriptedProviderProcess, telegram: FakeTelegram) -> None:
        provider.reset()
        daemon = start_bot(home, provider, telegram, dm_policy="allowlist")
        try:
            provider.push({"text": "Hello **there**. Use `ls` & see."})
            telegram.push(CHAT, OWNER, "hi bot")
            assert telegram.wait_for_texts(CHAT, 1) == ["Hello <b>there</b>. Use <code>ls</code> &amp; see."]
            assert provider.requests()[-1]["body"]["messages"][-1] == {"role": "user", "content": "hi bot"}
            assert "Telegram" in provider.requests()[-1]["body"]["messages"][0]["content"]  # the platform hint
            telegram.push(777, STRANGER, "let me in")
            wait(lambda: _details(home)["refused"] == 1, "the stranger to be refused")
            assert telegram.texts_to(777) == []  # dm_policy allowlist: ignored, as in Hermes
            assert len(provider.requests()) == 1  # the model never saw the stranger
            assert _details(home)["connection"] == "connected"
            info = json.loads(run_cli(home, "sessions", "show", telegram_session_id(CHAT), "--json").stdout)
            assert info["session"]["source"] == "telegram", info
        finally:
            daemon.stop()
        assert TOKEN not in daemon.log()
        handled = len(telegram.calls)
        # Restarted: the updates handled before are not handled again; a new one is.
        daemon = start_bot(home, provider, telegram, dm_policy="allowlist")
        try:
            provider.push({"text": "Second answer."})
            telegram.push(CHAT, OWNER, "again")
            assert telegram.wait_for_texts(CHAT, 2)[1] == "Second answer."
            assert [r["body"]["messages"][-1]["content"] for r in provider.requests()] == ["hi bot", "again"]
            assert len(telegram.calls) > handled
        finally:
            daemon.stop()

    def test_a_429_is_waited_out_and_cron_delivers(self, home: Path, provider: ScriptedProviderProcess, telegram: FakeTelegram) -> None:
        provider.reset()
        daemon = start_bot(home, provider, telegram, home_channel=CHAT)
        try:
            wait(lambda: "getUpdates" in telegram.calls, "the bot to connect")
            telegram.fail_next("sendMessage", 429, {
                "ok": False, "error_code": 429, "description": "Too Many Requests: retry after 1", "parameters": {"retry_after": 1},
            })
            provider.push({"text": "The nightly digest."})
            job = json.loads(run_cli(home, "cron", "add", "--schedule", "every 1d", "--prompt", "Digest.",
                                     "--name", "nightly", "--deliver", "telegram", "--json").stdout)["jobs"][0]
            assert run_cli(home, "cron", "run-now", job["id"]).returncode == 0
            # After the 429, once; named, so a chat with several jobs can tell whose answer it is.
            assert telegram.wait_for_texts(CHAT, 1) == ["Cron job 'nightly':\n\nThe nightly digest."]
            wait(lambda: json.loads(run_cli(home, "cron", "status", job["id"], "--json").stdout)["jobs"][0]["last_status"] == "ok",
                  "the run to be recorded")
        finally:
            daemon.stop()

    def test_a_bad_token_is_a_failed_state_not_a_crash(self, home: Path, provider: ScriptedProviderProcess, telegram: FakeTelegram) -> None:
        start_bot(home, provider, telegram).stop()  # writes the config
        daemon = DaemonProcess(home)
        daemon.extra_env = {"TELEGRAM_BOT_TOKEN": "999:wrong"}
        daemon.start()
        try:
            def failed() -> bool:
                status = json.loads(run_cli(home, "inspect", "platform/telegram", "--json").stdout)
                return status.get("details", {}).get("connection") == "failed"
            wait(failed, "the bot to report the refused token")
            assert run_cli(home, "status").returncode == 0  # the daemon serves on
        finally:
            daemon.stop()
        assert "999:wrong" not in daemon.log()

    def test_a_long_reply_is_split_outside_code(self, home: Path, provider: ScriptedProviderProcess, telegram: FakeTelegram) -> None:
        """A 10,000-character answer arrives in pieces within Telegram's limit, none cutting a code block."""
        provider.reset()
        daemon = start_bot(home, provider, telegram)
        try:
            prose = "\n\n".join(f"Paragraph {i}: " + "words " * 60 for i in range(20))
            code = "```python\n" + "\n".join(f"print({i})" for i in range(200)) + "\n```"
            answer = (prose + "\n\n" + code)[:10_000] if len(prose) > 10_000 else prose + "\n\n" + code
            provider.push({"text": answer})
            telegram.push(CHAT, OWNER, "write a lot")
            wait(lambda: sum(len(t) for t in telegram.texts_to(CHAT)) >= 9_000, "the long answer")
            pieces = telegram.texts_to(CHAT)
            assert len(pieces) >= 3 and all(utf16_length(piece) <= 4096 for piece in pieces), [len(p) for p in pieces]
            assert all(piece.count("<pre>") == piece.count("</pre>") for piece in pieces)
            assert "".join(pieces).count("print(199)") == 1 and "Paragraph 19" in "".join(pieces)
        finally:
            daemon.stop()

    def test_a_sleeping_chat_is_forgotten_and_found_again(
        self, home: Path, provider: ScriptedProviderProcess, telegram: FakeTelegram
    ) -> None:
        """The bot remembers live chats only: when a chat's session hibernates its follower ends and the
        desk lets it go; the next message wakes the session with its history."""
        provider.reset()
        daemon = start_bot(home, provider, telegram, config={"daemon": {"hibernate_after_seconds": 0.5}})
        try:
            provider.push({"text": "Noted: 42."}, {"text": "It was 42."})
            telegram.push(CHAT, OWNER, "remember 42")
            assert telegram.wait_for_texts(CHAT, 1) == ["Noted: 42."]

            def forgotten() -> bool:
                details = json.loads(run_cli(home, "inspect", "platform/telegram", "--json").stdout)["details"]
                return bool(details["chats"] == 0)

            wait(forgotten, "the chat to be let go with its sleeping session")
            telegram.push(CHAT, OWNER, "what was it?")
            assert telegram.wait_for_texts(CHAT, 2)[1] == "It was 42."
            assert "remember 42" in json.dumps(provider.requests()[-1]["body"]["messages"])
        finally:
            daemon.stop()

    def test_malformed_updates_are_skipped(self, home: Path, provider: ScriptedProviderProcess, telegram: FakeTelegram) -> None:
        """Updates that are not what the Bot API documents are logged and skipped; the bot goes on."""
        provider.reset()
        daemon = start_bot(home, provider, telegram)
        try:
            wait(lambda: "getUpdates" in telegram.calls, "the bot to poll")
            for junk in (
                {"update_id": 1, "message": "not an object"},
                {"update_id": 2, "message": {"chat": {"id": "x"}, "from": {"id": OWNER}, "text": "hi"}},
                {"update_id": 3, "callback_query": {"id": "q", "data": None}},
                {"update_id": 4, "message": {"chat": {"id": CHAT, "type": "private"}, "from": {"id": OWNER}, "photo": "nope"}},
                {"update_id": 5, "edited_message": {"text": "an update kind not asked for"}},
            ):
                telegram.push_raw(junk)
            provider.push({"text": "Still fine."})
            telegram.push(CHAT, OWNER, "are you ok?")
            assert telegram.wait_for_texts(CHAT, 1) == ["Still fine."]
            details = json.loads(run_cli(home, "inspect", "platform/telegram", "--json").stdout)["details"]
            assert details["connection"] == "connected" and details["offset"] == telegram.next_update, details
            assert len(provider.requests()) == 1
        finally:
            daemon.stop()


def _details(home: Path) -> dict[str, object]:
    return dict(inspect_json(home, "platform/telegram")["details"])
