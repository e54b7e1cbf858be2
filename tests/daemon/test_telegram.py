"""The Telegram bot in a real daemon, against the fake Bot API: a conversation, a refused user, no
update handled twice across a restart, a 429 waited out, cron results delivered, and a token never logged."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from actors.platform.telegram import telegram_session_id
from tests.daemon.helpers import DaemonProcess, ScriptedProviderProcess, run_cli
from tests.platform.telegram_fake import TOKEN, FakeTelegram, fake_telegram

OWNER, STRANGER, CHAT = 1001, 2002, 555


@pytest.fixture
def telegram() -> Iterator[FakeTelegram]:
    with fake_telegram() as fake:
        yield fake


def _start(home: Path, provider: ScriptedProviderProcess, fake: FakeTelegram, **telegram: Any) -> DaemonProcess:
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    section = {"enabled": True, "base_url": fake.url, "allowed_users": [OWNER], "poll_timeout": 1, **telegram}
    (home / "config.yaml").write_text(json.dumps({
        "model": {"default": "scripted-model", "provider": "custom", "base_url": provider.base_url},
        "platforms": {"telegram": section},
    }))
    daemon = DaemonProcess(home)
    daemon.extra_env = {"TELEGRAM_BOT_TOKEN": TOKEN}
    return daemon.start()


def _wait(predicate: Any, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


class TestTelegram:
    """A chat is a session; strangers are refused; offsets survive a restart."""

    def test_conversation_refusal_and_restart(self, home: Path, provider: ScriptedProviderProcess, telegram: FakeTelegram) -> None:
        provider.reset()
        daemon = _start(home, provider, telegram)
        try:
            provider.push({"text": "Hello **there**. Use `ls` & see."})
            telegram.push(CHAT, OWNER, "hi bot")
            assert telegram.wait_for_texts(CHAT, 1) == ["Hello <b>there</b>. Use <code>ls</code> &amp; see."]
            assert provider.requests()[-1]["body"]["messages"][-1] == {"role": "user", "content": "hi bot"}
            assert "Telegram" in provider.requests()[-1]["body"]["messages"][0]["content"]  # the platform hint
            telegram.push(777, STRANGER, "let me in")
            assert "not set up to talk with you" in telegram.wait_for_texts(777, 1)[0]
            assert len(provider.requests()) == 1  # the model never saw the stranger
            status = json.loads(run_cli(home, "inspect", "platform/telegram", "--json").stdout)
            assert status["details"]["connection"] == "connected" and status["details"]["refused"] == 1, status
            info = json.loads(run_cli(home, "sessions", "show", telegram_session_id(CHAT), "--json").stdout)
            assert info["session"]["source"] == "telegram", info
        finally:
            daemon.stop()
        assert TOKEN not in daemon.log()
        handled = len(telegram.calls)
        # Restarted: the updates handled before are not handled again; a new one is.
        daemon = _start(home, provider, telegram)
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
        daemon = _start(home, provider, telegram, home_channel=CHAT)
        try:
            _wait(lambda: "getUpdates" in telegram.calls, "the bot to connect")
            telegram.fail_next("sendMessage", 429, {
                "ok": False, "error_code": 429, "description": "Too Many Requests: retry after 1", "parameters": {"retry_after": 1},
            })
            provider.push({"text": "The nightly digest."})
            job = json.loads(run_cli(home, "cron", "add", "--schedule", "every 1d", "--prompt", "Digest.",
                                     "--deliver", "telegram", "--json").stdout)["jobs"][0]
            assert run_cli(home, "cron", "run-now", job["id"]).returncode == 0
            assert telegram.wait_for_texts(CHAT, 1) == ["The nightly digest."]  # after the 429, once
            _wait(lambda: json.loads(run_cli(home, "cron", "status", job["id"], "--json").stdout)["jobs"][0]["last_status"] == "ok",
                  "the run to be recorded")
        finally:
            daemon.stop()

    def test_a_bad_token_is_a_failed_state_not_a_crash(self, home: Path, provider: ScriptedProviderProcess, telegram: FakeTelegram) -> None:
        _start(home, provider, telegram).stop()  # writes the config
        daemon = DaemonProcess(home)
        daemon.extra_env = {"TELEGRAM_BOT_TOKEN": "999:wrong"}
        daemon.start()
        try:
            def failed() -> bool:
                status = json.loads(run_cli(home, "inspect", "platform/telegram", "--json").stdout)
                return status.get("details", {}).get("connection") == "failed"
            _wait(failed, "the bot to report the refused token")
            assert run_cli(home, "status").returncode == 0  # the daemon serves on
        finally:
            daemon.stop()
        assert "999:wrong" not in daemon.log()
