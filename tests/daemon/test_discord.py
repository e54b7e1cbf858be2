"""The Discord bot in a real daemon, against the fake Discord (REST and Gateway on loopback): a DM and
a guild channel, a dropped websocket resumed without losing an event, a reconnect asked by Discord,
rate-limit buckets honoured, an approval by button, and a refused token."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.daemon.helpers import DaemonProcess, ScriptedProviderProcess, run_cli
from tests.daemon.platform_helpers import bot_details
from tests.daemon.telegram_daemon import wait
from tests.platform.discord_fake import TOKEN, FakeDiscord

OWNER, STRANGER = "111111111111111111", "222222222222222222"
DM, CHANNEL = "300000000000000001", "300000000000000002"


def _start(home: Path, provider: ScriptedProviderProcess, fake: FakeDiscord, token: str = TOKEN, **discord: Any) -> DaemonProcess:
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    section = {"enabled": True, "api_url": fake.api_url, "allow_from": [OWNER], **discord}
    (home / "config.yaml").write_text(json.dumps({
        "model": {"default": "scripted-model", "provider": "custom", "base_url": provider.base_url},
        "platforms": {"discord": section},
    }))
    daemon = DaemonProcess(home)
    daemon.extra_env = {"DISCORD_BOT_TOKEN": token}
    return daemon.start()


def _details(home: Path) -> dict[str, Any]:
    return bot_details(home, "discord")


def _user_texts(provider: ScriptedProviderProcess) -> list[str]:
    return [r["body"]["messages"][-1]["content"] for r in provider.requests() if r["body"]["messages"][-1]["role"] == "user"]


class TestDiscord:
    def test_a_dm_a_guild_channel_and_a_stranger(self, home: Path, provider: ScriptedProviderProcess, discord: FakeDiscord) -> None:
        provider.reset()
        daemon = _start(home, provider, discord, dm_policy="pairing")
        try:
            wait(lambda: _details(home).get("connection") == "connected", "the bot to connect")
            provider.push({"text": "Hello **there**."}, {"text": "Answered in the channel."})
            discord.push_message(DM, OWNER, "hi bot")
            assert discord.wait_for_texts(DM, 1) == ["Hello **there**."]
            assert "Discord" in provider.requests()[-1]["body"]["messages"][0]["content"]  # the platform hint
            discord.push_message(CHANNEL, OWNER, "talking among ourselves", guild=True)
            discord.push_message(CHANNEL, OWNER, "what do you think?", guild=True, mention=True)
            assert discord.wait_for_texts(CHANNEL, 1) == ["Answered in the channel."]
            discord.push_message("300000000000000009", STRANGER, "let me in")
            assert "pairing code" in discord.wait_for_texts("300000000000000009", 1)[0]
            assert _user_texts(provider) == ["hi bot", "what do you think?"]
            details = _details(home)
            assert details["ignored"] == 1 and details["refused"] == 1 and discord.identifies == 1, details
            [status] = json.loads(run_cli(home, "status", "--json").stdout)["platforms"]
            assert status["name"] == "discord" and status["connection"] == "connected" and status["chats"] == 2, status
        finally:
            daemon.stop()
        assert TOKEN not in daemon.log()

    def test_a_dropped_websocket_is_resumed_mid_turn(self, home: Path, provider: ScriptedProviderProcess, discord: FakeDiscord) -> None:
        provider.reset()
        daemon = _start(home, provider, discord)
        try:
            wait(lambda: _details(home).get("connection") == "connected", "the bot to connect")
            provider.push({"text": "The slow answer.", "delay_first_byte": 1.0}, {"text": "The second answer."})
            discord.push_message(DM, OWNER, "think hard")
            wait(lambda: len(provider.requests()) == 1, "the turn to start")
            discord.drop()
            discord.push_message(DM, OWNER, "and then?")  # sent while the bot is away: replayed on resume
            assert discord.wait_for_texts(DM, 2) == ["The slow answer.", "The second answer."]
            assert _user_texts(provider) == ["think hard", "and then?"]  # each once
            assert discord.resumes >= 1 and discord.identifies == 1
            discord.ask_reconnect()
            wait(lambda: discord.resumes >= 2 and _details(home).get("connection") == "connected", "the asked reconnect")
            provider.push({"text": "Still here."})
            discord.push_message(DM, OWNER, "still there?")
            assert discord.wait_for_texts(DM, 3)[2] == "Still here."
            discord.invalidate(resumable=False)  # op 9, false: the session is gone, identify anew
            wait(lambda: discord.identifies == 2 and _details(home).get("connection") == "connected", "a new session")
            provider.push({"text": "New session, same chat."})
            discord.push_message(DM, OWNER, "and now?")
            assert discord.wait_for_texts(DM, 4)[3] == "New session, same chat."
        finally:
            daemon.stop()

    def test_a_zombie_connection_is_replaced(self, home: Path, provider: ScriptedProviderProcess, discord: FakeDiscord) -> None:
        """A heartbeat Discord never acknowledges means a dead connection: the bot reconnects and resumes."""
        provider.reset()
        daemon = _start(home, provider, discord)
        try:
            wait(lambda: _details(home).get("connection") == "connected", "the bot to connect")
            discord.ack_heartbeats = False
            wait(lambda: discord.resumes >= 1, "the bot to give up on the silent connection")
            discord.ack_heartbeats = True
            provider.push({"text": "Back."})
            discord.push_message(DM, OWNER, "there?")
            assert discord.wait_for_texts(DM, 1) == ["Back."]
            assert discord.identifies == 1
        finally:
            daemon.stop()

    def test_rate_limit_buckets_are_honoured(self, home: Path, provider: ScriptedProviderProcess, discord: FakeDiscord) -> None:
        provider.reset()
        discord.bucket_size, discord.bucket_window = 2, 0.5
        daemon = _start(home, provider, discord, tool_progress=False)
        try:
            wait(lambda: _details(home).get("connection") == "connected", "the bot to connect")
            discord.fail_next_send(429, {"message": "You are being rate limited.", "retry_after": 0.3, "global": False})
            provider.push({"text": "\n\n".join(f"Paragraph {i}: " + "words " * 60 for i in range(25))})
            discord.push_message(DM, OWNER, "write a lot")
            discord.wait_until(lambda: any("Paragraph 24" in t for t in discord.texts_to(DM)), "the whole answer")
            pieces = discord.texts_to(DM)
            assert len(pieces) >= 5 and all(len(piece) <= 2000 for piece in pieces)
            assert discord.violations == 0  # the bucket's headers were obeyed: no 429 earned
            assert _details(home)["rate_limited_seconds"] > 0
        finally:
            daemon.stop()

    def test_an_approval_answered_by_button(
        self, home: Path, provider: ScriptedProviderProcess, discord: FakeDiscord, tmp_path: Path
    ) -> None:
        provider.reset()
        daemon = _start(home, provider, discord, sandbox="full-access")
        target = tmp_path / "victim"
        target.mkdir()
        try:
            wait(lambda: _details(home).get("connection") == "connected", "the bot to connect")
            provider.push(
                {"tool_calls": [{"id": "rm1", "name": "terminal", "arguments": {"command": f"rm -r {target}"}}]},
                {"text": "Removed it."},
            )
            discord.push_message(DM, OWNER, "remove that directory")
            discord.wait_until(lambda: any(m["components"] for m in discord.sent), "the approval's buttons")
            asked = next(m for m in discord.sent if m["components"])
            buttons = {b["label"]: b["custom_id"] for row in asked["components"] for b in row["components"]}
            assert list(buttons) == ["Allow once", "Allow for this session", "Always allow", "Deny"]
            discord.push_press(DM, OWNER, buttons["Allow once"])
            discord.wait_until(lambda: "Removed it." in discord.texts_to(DM), "the turn's answer")
            assert not target.exists()
            [callback] = discord.callbacks
            assert callback["type"] == 4 and callback["data"] == {"content": "Allow once", "flags": 64}
            assert any(edit["components"] == [] and "→ once" in edit["content"] for edit in discord.edits)
        finally:
            daemon.stop()

    def test_malformed_events_are_skipped(self, home: Path, provider: ScriptedProviderProcess, discord: FakeDiscord) -> None:
        """Dispatches that are not what Discord documents are skipped; the connection and the bot go on."""
        provider.reset()
        daemon = _start(home, provider, discord)
        try:
            wait(lambda: _details(home).get("connection") == "connected", "the bot to connect")
            discord.push_event("MESSAGE_CREATE", {"channel_id": DM, "author": "nobody", "content": ["not", "text"]})
            discord.push_event("MESSAGE_CREATE", {"channel_id": DM, "author": {"id": OWNER}, "content": ["not", "text"], "mentions": 3})
            discord.push_event("MESSAGE_CREATE", {"channel_id": DM, "author": {"id": OWNER}, "attachments": "none"})
            discord.push_event("INTERACTION_CREATE", {"type": 3, "channel_id": DM, "user": {"id": OWNER}})
            discord.push_event("GUILD_CREATE", {"id": "700"})
            provider.push({"text": "Still fine."})
            discord.push_message(DM, OWNER, "are you ok?")
            assert discord.wait_for_texts(DM, 1) == ["Still fine."]
            assert _details(home)["connection"] == "connected" and discord.identifies == 1
            assert len(provider.requests()) == 1
        finally:
            daemon.stop()

    def test_a_refused_token_is_a_failed_state(self, home: Path, provider: ScriptedProviderProcess, discord: FakeDiscord) -> None:
        daemon = _start(home, provider, discord, token="wrong-token")
        try:
            wait(lambda: _details(home).get("connection") == "failed", "the bot to report the refused token")
            assert "401" in str(_details(home)["connection_error"]) or "Unauthorized" in str(_details(home)["connection_error"])
            assert run_cli(home, "status").returncode == 0
        finally:
            daemon.stop()
        assert "wrong-token" not in daemon.log()


class TestAttachments:
    """A user's attachment is fetched up to Hermes's max_attachment_bytes (32 MiB), whatever its type;
    a larger one is not, and the model is told."""

    def test_hermes_cap_and_any_type(self, home: Path, provider: ScriptedProviderProcess, discord: FakeDiscord, tmp_path: Path) -> None:
        provider.reset()
        workspace = tmp_path / "work"
        workspace.mkdir()
        discord.files["data.bin"] = b"\x00\x01 some bytes"
        daemon = _start(home, provider, discord, cwd=str(workspace))
        try:
            wait(lambda: _details(home).get("connection") == "connected", "the bot to connect")
            provider.push({"text": "Got them."})
            attachments = [  # Discord states each size; the fake serves the first one's few bytes
                {"id": "1", "url": f"{discord.base}/attachments/data.bin", "filename": "data.bin",
                 "size": 25 * 1024 * 1024, "content_type": "application/octet-stream"},
                {"id": "2", "url": f"{discord.base}/attachments/huge.zip", "filename": "huge.zip",
                 "size": 40 * 1024 * 1024, "content_type": "application/zip"},
            ]
            discord.push_message(DM, OWNER, "two files", attachments=attachments)
            assert discord.wait_for_texts(DM, 1) == ["Got them."]
            [text] = _user_texts(provider)
            [saved] = (workspace / "incoming").iterdir()
            assert saved.read_bytes() == b"\x00\x01 some bytes" and f"saved at {saved}" in text
            assert "a document of 41,943,040 bytes, over the 33,554,432-byte limit; it was not fetched" in text
        finally:
            daemon.stop()


class TestReactions:
    """As Hermes's Discord bot (``reactions``, on by default): a message taken for a turn shows 👀 while it is
    worked on and ✅ once answered; a command, an ignored message and ``reactions: false`` get none."""

    def test_marks(self, home: Path, provider: ScriptedProviderProcess, discord: FakeDiscord) -> None:
        provider.reset()
        daemon = _start(home, provider, discord)
        try:
            wait(lambda: _details(home).get("connection") == "connected", "the bot to connect")
            provider.push({"text": "Answered."})
            discord.push_message(CHANNEL, OWNER, "chatter without a mention", guild=True)
            discord.push_message(DM, OWNER, "/status")
            asked = discord.push_message(DM, OWNER, "hi bot")
            assert discord.wait_for_texts(DM, 2)[1] == "Answered."
            discord.wait_until(lambda: ("PUT", asked, "✅") in discord.reactions, "the answered mark")
            assert discord.reactions == [("PUT", asked, "👀"), ("DELETE", asked, "👀"), ("PUT", asked, "✅")]
        finally:
            daemon.stop()

    def test_off(self, home: Path, provider: ScriptedProviderProcess, discord: FakeDiscord) -> None:
        provider.reset()
        daemon = _start(home, provider, discord, reactions=False)
        try:
            wait(lambda: _details(home).get("connection") == "connected", "the bot to connect")
            provider.push({"text": "Answered."})
            discord.push_message(DM, OWNER, "hi bot")
            assert discord.wait_for_texts(DM, 1) == ["Answered."]
            assert discord.reactions == []
        finally:
            daemon.stop()
