"""Hermes's per-channel settings through a real daemon, against each built platform's fake: a channel of
``free_response_channels`` is answered without a mention, one outside ``allowed_channels`` not even with
one, and a chat's ``channel_prompts`` entry reaches the model's system prompt for that chat's turns only.
Each platform reads them under the names and variables Hermes gives it there."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.daemon.helpers import DaemonProcess, ScriptedProviderProcess
from tests.daemon.platform_helpers import bot_details, user_texts, wait_connected
from tests.platform.discord_fake import FakeDiscord
from tests.platform.discord_fake import TOKEN as DISCORD_TOKEN
from tests.platform.matrix_fake import BOT as MATRIX_BOT
from tests.platform.matrix_fake import TOKEN as MATRIX_TOKEN
from tests.platform.matrix_fake import FakeMatrix
from tests.platform.mattermost_fake import TOKEN as MATTERMOST_TOKEN
from tests.platform.mattermost_fake import FakeMattermost
from tests.platform.slack_fake import APP_TOKEN, BOT_TOKEN, FakeSlack
from tests.platform.telegram_fake import TOKEN as TELEGRAM_TOKEN
from tests.platform.telegram_fake import FakeTelegram

PIRATE = "Answer as a pirate would."


def _start(home: Path, provider: ScriptedProviderProcess, document: dict[str, Any], env: dict[str, str]) -> DaemonProcess:
    """Start a daemon whose config.yaml is ``document`` (as YAML, so chat ids may be numbers) beside the
    scripted model."""
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    model = {"default": "scripted-model", "provider": "custom", "base_url": provider.base_url}
    (home / "config.yaml").write_text(yaml.safe_dump({"model": model, **document}))
    daemon = DaemonProcess(home)
    daemon.extra_env = env
    return daemon.start()


def _system_prompts(provider: ScriptedProviderProcess) -> dict[str, str]:
    """Each user message the model was asked, and the system prompt it came with."""
    found = {}
    for request in provider.requests():
        messages = request["body"]["messages"]
        if messages[-1]["role"] == "user":
            found[messages[-1]["content"]] = messages[0]["content"]
    return found


class TestTelegram:
    """Hermes's top-level ``telegram:`` names (``allowed_chats``, ``free_response_chats``, numeric
    ``channel_prompts`` keys) steer a bot that otherwise needs a mention in groups."""

    def test_chats(self, home: Path, provider: ScriptedProviderProcess, telegram: FakeTelegram) -> None:
        provider.reset()
        owner, team, other, dm = 1001, -100777, -100888, 555
        daemon = _start(home, provider, {
            "telegram": {"allowed_chats": [team], "free_response_chats": [team], "channel_prompts": {team: PIRATE}},
            "platforms": {"telegram": {"enabled": True, "base_url": telegram.url, "allow_from": [owner], "poll_timeout": 1,
                                       "require_mention": True}},
        }, {"TELEGRAM_BOT_TOKEN": TELEGRAM_TOKEN})
        try:
            provider.push({"text": "Arr, aye."}, {"text": "Hello."})
            telegram.push(other, owner, "@hermes_test_bot are you here?", group=True)  # not an allowed chat
            telegram.push(team, owner, "no mention needed here", group=True)
            assert telegram.wait_for_texts(team, 1) == ["Arr, aye."]
            telegram.push(dm, owner, "and in private?")  # direct messages are never filtered
            assert telegram.wait_for_texts(dm, 1) == ["Hello."]
            assert telegram.texts_to(other) == []
            prompts = _system_prompts(provider)
            assert PIRATE in prompts["no mention needed here"] and PIRATE not in prompts["and in private?"]
            assert user_texts(provider) == ["no mention needed here", "and in private?"]
            assert bot_details(home, "telegram")["ignored"] == 1
        finally:
            daemon.stop()


class TestDiscord:
    """``DISCORD_FREE_RESPONSE_CHANNELS`` and ``DISCORD_ALLOWED_CHANNELS`` (Hermes's variables) and the
    section's ``channel_prompts``."""

    def test_channels(self, home: Path, provider: ScriptedProviderProcess, discord: FakeDiscord) -> None:
        provider.reset()
        owner, free, mentioned, elsewhere = "111111111111111111", "300000000000000002", "300000000000000003", "300000000000000004"
        daemon = _start(home, provider, {
            "platforms": {"discord": {"enabled": True, "api_url": discord.api_url, "allow_from": [owner],
                                      "channel_prompts": {free: PIRATE}}},
        }, {"DISCORD_BOT_TOKEN": DISCORD_TOKEN, "DISCORD_FREE_RESPONSE_CHANNELS": free,
            "DISCORD_ALLOWED_CHANNELS": f"{free},{mentioned}"})
        try:
            wait_connected(home, "discord")
            provider.push({"text": "Arr, aye."}, {"text": "Mentioned."})
            discord.push_message(elsewhere, owner, "are you here?", guild=True, mention=True)  # not allowed
            discord.push_message(mentioned, owner, "chatter without a mention", guild=True)  # allowed, needs a mention
            discord.push_message(free, owner, "no mention needed here", guild=True)
            assert discord.wait_for_texts(free, 1) == ["Arr, aye."]
            discord.push_message(mentioned, owner, "what do you think?", guild=True, mention=True)
            assert discord.wait_for_texts(mentioned, 1) == ["Mentioned."]
            assert discord.texts_to(elsewhere) == []
            prompts = _system_prompts(provider)
            assert PIRATE in prompts["no mention needed here"] and PIRATE not in prompts["what do you think?"]
            assert bot_details(home, "discord")["ignored"] == 2
        finally:
            daemon.stop()


class TestSlack:
    """Hermes's top-level ``slack:`` keys: a free-response channel's every message starts a thread, a
    channel outside ``allowed_channels`` is not answered even when the app is mentioned."""

    def test_channels(self, home: Path, provider: ScriptedProviderProcess, slack: FakeSlack) -> None:
        provider.reset()
        owner, free, elsewhere = "UOWNER0001", "C0FREE0001", "C0ELSE0001"
        daemon = _start(home, provider, {
            "slack": {"free_response_channels": [free], "allowed_channels": [free], "channel_prompts": {free: PIRATE}},
            "platforms": {"slack": {"enabled": True, "api_url": slack.api_url, "allow_from": [owner]}},
        }, {"SLACK_BOT_TOKEN": BOT_TOKEN, "SLACK_APP_TOKEN": APP_TOKEN})
        try:
            wait_connected(home, "slack")
            provider.push({"text": "Arr, aye."})
            slack.push_message(elsewhere, owner, "are you here?", mention=True)
            asked = slack.push_message(free, owner, "no mention needed here")
            assert slack.wait_for_texts(free, 1) == ["Arr, aye."]
            assert slack.posts_to(free)[0]["thread_ts"] == asked
            assert slack.texts_to(elsewhere) == []
            assert PIRATE in _system_prompts(provider)["no mention needed here"]
            assert user_texts(provider) == ["no mention needed here"]
        finally:
            daemon.stop()


class TestMatrix:
    """Hermes's Matrix names: ``free_response_rooms`` from its top-level section, ``MATRIX_ALLOWED_ROOMS``."""

    def test_rooms(self, home: Path, provider: ScriptedProviderProcess, matrix: FakeMatrix) -> None:
        provider.reset()
        owner, free, elsewhere = "@owner:fake.test", "!free:fake.test", "!else:fake.test"
        matrix.add_room(free, 5)
        matrix.add_room(elsewhere, 5)
        daemon = _start(home, provider, {
            "matrix": {"free_response_rooms": [free], "channel_prompts": {free: PIRATE}},
            "platforms": {"matrix": {"enabled": True, "allow_from": [owner], "sync_timeout_seconds": 5, "retry_first_seconds": 0.05}},
        }, {"MATRIX_HOMESERVER": matrix.homeserver, "MATRIX_ACCESS_TOKEN": MATRIX_TOKEN, "MATRIX_ALLOWED_ROOMS": free})
        try:
            wait_connected(home, "matrix")
            provider.push({"text": "Arr, aye."})
            matrix.push_message(elsewhere, owner, f"{MATRIX_BOT}: are you here?", **{"m.mentions": {"user_ids": [MATRIX_BOT]}})
            matrix.push_message(free, owner, "no mention needed here")
            assert matrix.wait_for_texts(free, 1) == ["Arr, aye."]
            assert matrix.texts_to(elsewhere) == []
            assert PIRATE in _system_prompts(provider)["no mention needed here"]
            assert user_texts(provider) == ["no mention needed here"]
        finally:
            daemon.stop()


class TestMattermost:
    """``platforms.mattermost``'s ``free_response_channels``, ``channel_prompts`` and ``mention_patterns`` (one
    bare string, as Hermes takes it): a message with the wake words is answered as a mention is."""

    def test_channels(self, home: Path, provider: ScriptedProviderProcess, mattermost: FakeMattermost) -> None:
        provider.reset()
        owner, free, other = "o" * 26, "f" * 26, "k" * 26
        daemon = _start(home, provider, {
            "platforms": {"mattermost": {
                "enabled": True, "url": mattermost.url, "websocket_url": mattermost.socket_url, "allow_from": [owner],
                "retry_first_seconds": 0.05, "free_response_channels": [free], "channel_prompts": {free: PIRATE},
                "mention_patterns": r"^hey,? hermes\b",
            }},
        }, {"MATTERMOST_TOKEN": MATTERMOST_TOKEN})
        try:
            wait_connected(home, "mattermost")
            provider.push({"text": "Arr, aye."}, {"text": "Woken."})
            mattermost.push_post(other, owner, "chatter without a mention, about hermes")
            mattermost.push_post(free, owner, "no mention needed here")
            assert mattermost.wait_for_texts(free, 1) == ["Arr, aye."]
            mattermost.push_post(other, owner, "Hey Hermes, what do you think?")
            assert mattermost.wait_for_texts(other, 1) == ["Woken."]
            prompts = _system_prompts(provider)
            assert PIRATE in prompts["no mention needed here"] and PIRATE not in prompts["Hey Hermes, what do you think?"]
            assert user_texts(provider) == ["no mention needed here", "Hey Hermes, what do you think?"]
            assert bot_details(home, "mattermost")["ignored"] == 1
        finally:
            daemon.stop()
