"""The messaging platforms' sections read Hermes Agent 0.19.0's keys, values and variables for who may talk,
mentions in groups and attachments; our earlier names still load, with a warning."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from config.discord import DiscordConfig
from config.gateway import read_access_environment
from config.loader import Config, ConfigError, load_config
from config.matrix import MatrixConfig
from config.mattermost import MattermostConfig
from config.signal import SignalConfig
from config.slack import SlackConfig
from config.telegram import TelegramConfig
from config.whatsapp import WhatsAppConfig

FIXTURE = Path(__file__).parents[1] / "fixtures" / "hermes_0_19" / "config_defaults.json"


def _load(tmp_path: Path, document: dict[str, Any]) -> tuple[Config, list[str]]:
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(document))
    warnings: list[str] = []
    return load_config(tmp_path, warnings=warnings, log_warnings=False), warnings


def _hermes_default(key: str) -> Any:
    return json.loads(FIXTURE.read_text())["defaults"][key]


class TestHermesKeys:
    """Hermes's names are read where Hermes writes them: its top-level sections and under platforms."""

    def test_top_level_sections_are_read_as_platforms(self, tmp_path: Path) -> None:
        config, warnings = _load(tmp_path, {
            "telegram": {"allow_from": "1001, 1002", "group_allow_from": [3003], "require_mention": True, "reactions": True},
            "discord": {"allow_from": ["111111111111111111"], "max_attachment_bytes": 1000, "allow_any_attachment": True},
        })
        telegram, discord = config.platforms.telegram, config.platforms.discord
        assert (telegram.allow_from, telegram.group_allow_from, telegram.require_mention) == (("1001", "1002"), ("3003",), True)
        assert (discord.allow_from, discord.max_attachment_bytes, discord.allow_any_attachment) == (("111111111111111111",), 1000, True)
        assert [w for w in warnings if "allow_from" in w or "attachment" in w] == []
        assert any(w.startswith("Hermes setting telegram") for w in warnings), "what is not read is still reported"

    def test_our_section_wins_over_hermes_top_level(self, tmp_path: Path) -> None:
        config, warnings = _load(tmp_path, {"telegram": {"allow_from": [1]}, "platforms": {"telegram": {"allow_from": [2]}}})
        assert config.platforms.telegram.allow_from == ("2",)
        assert "Hermes key telegram.allow_from ignored: platforms.telegram.allow_from is set too" in warnings

    def test_a_bare_require_mention_is_telegrams(self, tmp_path: Path) -> None:
        config, warnings = _load(tmp_path, {"require_mention": True})
        assert config.platforms.telegram.require_mention is True and config.platforms.discord.require_mention is True
        assert warnings == []

    def test_a_home_channel_written_hermes_way_is_its_chat_id(self, tmp_path: Path) -> None:
        config, warnings = _load(tmp_path, {"platforms": {
            "telegram": {"home_channel": {"platform": "telegram", "chat_id": "-1001234", "name": "Home"}},
            "discord": {"home_channel": "222333444555666777"},
        }})
        assert (config.platforms.telegram.home_channel, config.platforms.discord.home_channel) == (-1001234, 222333444555666777)
        assert warnings == []
        with pytest.raises(ConfigError, match="home_channel"):
            _load(tmp_path, {"platforms": {"telegram": {"home_channel": {"name": "no id"}}}})

    def test_a_bad_list_is_an_error_naming_the_key(self, tmp_path: Path) -> None:
        with pytest.raises(ConfigError, match="allow_from"):
            _load(tmp_path, {"platforms": {"telegram": {"allow_from": [{"id": 1}]}}})

    def test_defaults_are_hermes_defaults(self) -> None:
        assert DiscordConfig().max_attachment_bytes == _hermes_default("discord.max_attachment_bytes") == 32 * 1024 * 1024
        assert DiscordConfig().allow_any_attachment is _hermes_default("discord.allow_any_attachment")
        assert DiscordConfig().require_mention is _hermes_default("discord.require_mention")
        assert TelegramConfig().require_mention is False, "Hermes's TELEGRAM_REQUIRE_MENTION defaults to false"
        assert DiscordConfig(max_attachment_bytes=0).max_file_bytes == 0, "0: no cap, as in Hermes"


class TestDeprecatedNames:
    """Our earlier keys load under Hermes's names, with a warning naming the new key."""

    def test_allowed_users_is_read_as_allow_from(self, tmp_path: Path) -> None:
        config, warnings = _load(tmp_path, {"platforms": {"telegram": {"allowed_users": [1001]}, "discord": {"allowed_users": [7]}}})
        assert config.platforms.telegram.allow_from == ("1001",) and config.platforms.discord.allow_from == ("7",)
        assert "deprecated key platforms.telegram.allowed_users: use platforms.telegram.allow_from (read as platforms.telegram.allow_from this time)" in warnings
        assert any(w.startswith("deprecated key platforms.discord.allowed_users") for w in warnings)

    def test_discord_max_file_mb_is_read_in_bytes(self, tmp_path: Path) -> None:
        config, warnings = _load(tmp_path, {"platforms": {"discord": {"max_file_mb": 2}}})
        assert config.platforms.discord.max_attachment_bytes == 2 * 1024 * 1024
        assert any("use platforms.discord.max_attachment_bytes" in w for w in warnings)


class TestDmPolicy:
    """Unset, the DM policy is Hermes's: pairing with no allow list, strangers ignored with one."""

    def test_default_follows_the_lists(self) -> None:
        assert TelegramConfig().effective_dm_policy == "pairing"
        assert TelegramConfig(allow_from=("1",)).effective_dm_policy == "allowlist"
        assert TelegramConfig(group_allowed_chats=("-100",)).effective_dm_policy == "allowlist"
        assert TelegramConfig(allow_from=("1",), dm_policy="pairing").effective_dm_policy == "pairing"

    def test_disabled_is_a_policy(self, tmp_path: Path) -> None:
        config, _ = _load(tmp_path, {"platforms": {"discord": {"dm_policy": "disabled"}}})
        assert config.platforms.discord.effective_dm_policy == "disabled"


class TestAccessVariables:
    """Hermes's variables win over config.yaml, as the bot token's does."""

    def test_platform_variables(self) -> None:
        section = TelegramConfig(allow_from=("1",), require_mention=True)
        read = read_access_environment(section, {
            "TELEGRAM_ALLOWED_USERS": "5, 6", "TELEGRAM_GROUP_ALLOWED_USERS": "7", "TELEGRAM_GROUP_ALLOWED_CHATS": "-100,-200",
            "TELEGRAM_REQUIRE_MENTION": "false", "GATEWAY_ALLOWED_USERS": "9",
        })
        assert (read.allow_from, read.group_allow_from, read.group_allowed_chats) == (("5", "6", "9"), ("7",), ("-100", "-200"))
        assert read.require_mention is False

    def test_allow_all_and_other_platforms_variables(self) -> None:
        assert read_access_environment(DiscordConfig(), {"DISCORD_ALLOW_ALL_USERS": "true"}).allow_from == ("*",)
        assert read_access_environment(DiscordConfig(), {"GATEWAY_ALLOW_ALL_USERS": "yes"}).allow_from == ("*",)
        assert read_access_environment(DiscordConfig(), {"TELEGRAM_ALLOWED_USERS": "5"}) == DiscordConfig()
        assert read_access_environment(DiscordConfig(), {"DISCORD_REQUIRE_MENTION": "0"}).require_mention is False
        assert read_access_environment(DiscordConfig(), {"DISCORD_HOME_CHANNEL": "42"}).home_channel == 42
        assert read_access_environment(TelegramConfig(), {"TELEGRAM_HOME_CHANNEL": "-100"}).home_channel == -100


class TestSlackKeys:
    """Slack's section reads Hermes's top-level ``slack:`` keys, its variables and its defaults; its home
    channel is a channel id or name, not a number."""

    def test_hermes_top_level_and_defaults(self, tmp_path: Path) -> None:
        config, warnings = _load(tmp_path, {
            "slack": {"require_mention": False, "allowed_channels": "C1", "reactions": False, "strict_mention": True},
            "platforms": {"slack": {"home_channel": {"platform": "slack", "chat_id": "C0123ABCD", "name": "ops"}, "allow_from": "U1, U2"}},
        })
        slack = config.platforms.slack
        assert (slack.require_mention, slack.reactions, slack.home_channel, slack.allow_from) == (False, False, "C0123ABCD", ("U1", "U2"))
        assert slack.allowed_channels == ("C1",)
        assert any(w.startswith("Hermes setting slack") for w in warnings), "what is not read is reported"
        assert SlackConfig().require_mention is _hermes_default("slack.require_mention")

    def test_variables_win(self) -> None:
        section = read_access_environment(SlackConfig(allow_from=("U1",)), {"SLACK_ALLOWED_USERS": "U7,U8", "SLACK_REQUIRE_MENTION": "false"})
        assert section.allow_from == ("U7", "U8") and section.require_mention is False

    def test_tokens_are_never_shown(self) -> None:
        assert "xoxb" not in repr(SlackConfig(token="xoxb-secret", app_token="xapp-secret")) and "xapp" not in repr(SlackConfig(app_token="xapp-1"))


class TestMatrixKeys:
    """Matrix's section reads Hermes's top-level ``matrix:`` keys and defaults; its home room is a room id or alias."""

    def test_hermes_top_level_and_defaults(self, tmp_path: Path) -> None:
        config, warnings = _load(tmp_path, {
            "matrix": {"require_mention": False, "allowed_rooms": "!a:example.org", "ignore_users": ["@spam:x"]},
            "platforms": {"matrix": {"home_channel": {"platform": "matrix", "chat_id": "!home:example.org"}, "allow_from": "@a:x, @b:x"}},
        })
        matrix = config.platforms.matrix
        assert (matrix.require_mention, matrix.home_channel, matrix.allow_from) == (False, "!home:example.org", ("@a:x", "@b:x"))
        assert matrix.allowed_channels == ("!a:example.org",)
        assert any(w.startswith("Hermes setting matrix") for w in warnings), "what is not read is reported"
        assert MatrixConfig().require_mention is _hermes_default("matrix.require_mention")
        assert MatrixConfig().max_message_length == 16_000  # Hermes's MATRIX_MAX_MESSAGE_LENGTH default

    def test_the_token_is_never_shown(self) -> None:
        assert "syt_" not in repr(MatrixConfig(token="syt_secret"))


class TestMattermostKeys:
    """Mattermost's section reads Hermes's top-level ``mattermost:`` keys and defaults; the token is never shown."""

    def test_hermes_top_level_and_defaults(self, tmp_path: Path) -> None:
        config, warnings = _load(tmp_path, {
            "mattermost": {"require_mention": False, "allowed_channels": "abc", "reply_mode": "off"},
            "platforms": {"mattermost": {"home_channel": {"platform": "mattermost", "chat_id": "h" * 26}, "allow_from": "a1, b2"}},
        })
        section = config.platforms.mattermost
        assert (section.require_mention, section.home_channel, section.allow_from) == (False, "h" * 26, ("a1", "b2"))
        assert section.allowed_channels == ("abc",)
        assert any(w.startswith("Hermes setting mattermost") for w in warnings), "what is not read is reported"
        assert MattermostConfig().require_mention is _hermes_default("mattermost.require_mention")

    def test_the_token_is_never_shown(self) -> None:
        assert "mmtoken" not in repr(MattermostConfig(token="mmtoken"))


class TestPerChannelKeys:
    """Hermes's per-channel keys are read for every built platform: under its own names (Telegram's chats,
    Matrix's rooms), with chat ids YAML reads as numbers, and from the platform's variables."""

    def test_hermes_names_and_numbers(self, tmp_path: Path) -> None:
        config, warnings = _load(tmp_path, {
            "telegram": {"allowed_chats": [-100777], "free_response_chats": "-100777, -100888",
                         "channel_prompts": {-100777: "  Answer as a pirate. ", -100888: "  "}},
            "matrix": {"free_response_rooms": ["!a:x"]},
            "platforms": {"matrix": {"allowed_rooms": "!a:x, !b:x"}, "discord": {"free_response_channels": 1234}},
        })
        telegram, matrix = config.platforms.telegram, config.platforms.matrix
        assert (telegram.allowed_channels, telegram.free_response_channels) == (("-100777",), ("-100777", "-100888"))
        assert telegram.channel_prompts == {"-100777": "Answer as a pirate."}  # a blank prompt is none, as Hermes
        assert (matrix.allowed_channels, matrix.free_response_channels) == (("!a:x", "!b:x"), ("!a:x",))
        assert config.platforms.discord.free_response_channels == ("1234",)
        assert [w for w in warnings if "chats" in w or "rooms" in w or "channel" in w] == []

    def test_mention_patterns(self, tmp_path: Path) -> None:
        config, _ = _load(tmp_path, {"telegram": {"mention_patterns": "^hey bot"}, "platforms": {"slack": {"mention_patterns": ["a", "b+"]}}})
        assert (config.platforms.telegram.mention_patterns, config.platforms.slack.mention_patterns) == (("^hey bot",), ("a", "b+"))
        assert read_access_environment(SlackConfig(), {"SLACK_MENTION_PATTERNS": '["^x, y", "z"]'}).mention_patterns == ("^x, y", "z")
        assert read_access_environment(SlackConfig(), {"SLACK_MENTION_PATTERNS": "x,y"}).mention_patterns == ("x", "y")
        with pytest.raises(ConfigError, match=r"mention_patterns has '\(unclosed', not a regular expression"):
            _load(tmp_path, {"platforms": {"matrix": {"mention_patterns": ["(unclosed"]}}})

    def test_a_prompt_that_is_not_text_is_an_error_naming_the_key(self, tmp_path: Path) -> None:
        with pytest.raises(ConfigError, match=r"platforms\.slack\.channel_prompts"):
            _load(tmp_path, {"slack": {"channel_prompts": ["C1"]}})

    def test_variables_win(self) -> None:
        environ = {"TELEGRAM_ALLOWED_CHATS": "-1,-2", "TELEGRAM_FREE_RESPONSE_CHATS": "-2", "MATRIX_FREE_RESPONSE_ROOMS": "!r:x",
                   "SLACK_ALLOWED_CHANNELS": "C1", "DISCORD_FREE_RESPONSE_CHANNELS": "*", "MATTERMOST_ALLOWED_CHANNELS": "m1, m2"}
        telegram = read_access_environment(TelegramConfig(allowed_channels=("-9",)), environ)
        assert (telegram.allowed_channels, telegram.free_response_channels) == (("-1", "-2"), ("-2",))
        assert read_access_environment(MatrixConfig(), environ).free_response_channels == ("!r:x",)
        assert read_access_environment(SlackConfig(), environ).allowed_channels == ("C1",)
        assert read_access_environment(DiscordConfig(), environ).free_response_channels == ("*",)
        assert read_access_environment(MattermostConfig(), environ).allowed_channels == ("m1", "m2")


class TestSignalKeys:
    """Signal's section reads Hermes's top-level ``signal:`` keys, with Hermes's defaults (mention off, its daemon's address)."""

    def test_hermes_top_level_and_defaults(self, tmp_path: Path) -> None:
        config, warnings = _load(tmp_path, {
            "signal": {"require_mention": True, "free_response_channels": "x", "reply_prefix": "bot: "},
            "platforms": {"signal": {"home_channel": {"platform": "signal", "chat_id": "+15551234567"}, "allow_from": "+1555, +1666"}},
        })
        section = config.platforms.signal
        assert (section.require_mention, section.home_channel, section.allow_from) == (True, "+15551234567", ("+1555", "+1666"))
        assert any(w.startswith("Hermes setting signal") for w in warnings), "what is not read is reported"
        assert (SignalConfig().require_mention, SignalConfig().http_url) == (False, "http://127.0.0.1:8080")  # as Hermes's adapter

    def test_numbers_written_without_quotes(self, tmp_path: Path) -> None:
        """YAML reads ``+15551234567`` as a number, its ``+`` lost: it is read back as the Signal number."""
        (tmp_path / "config.yaml").write_text("platforms:\n  signal:\n    allow_from: [+15551234567, b0b0-uuid]\n")
        section = load_config(tmp_path, log_warnings=False).platforms.signal
        assert section.allow_from == ("+15551234567", "b0b0-uuid")



class TestWhatsAppKeys:
    """WhatsApp's section reads Hermes's ``platforms.whatsapp_cloud.extra`` keys; the bridge's is reported; no secret is shown."""

    def test_hermes_extra_keys(self, tmp_path: Path) -> None:
        extra = {"phone_number_id": "1098765", "access_token": "EAAGtoken", "app_secret": "appsecret", "verify_token": "word",
                 "api_version": "v21.0", "webhook_path": "/hooks/wa", "webhook_port": 8090}
        config, warnings = _load(tmp_path, {
            "platforms": {"whatsapp_cloud": {"enabled": True, "extra": extra, "home_channel": 15551230001, "allow_from": [15551230002]},
                          "whatsapp": {"enabled": True}},
        })
        section = config.platforms.whatsapp_cloud
        assert (section.phone_number_id, section.token, section.app_secret, section.verify_token) == ("1098765", "EAAGtoken", "appsecret", "word")
        assert (section.api_version, section.webhook_path, section.home_channel) == ("v21.0", "/hooks/wa", "15551230001")
        assert section.allow_from == ("15551230002",)  # YAML's numbers, read as the numbers' text
        assert any("platforms.whatsapp_cloud.extra" in w for w in warnings), "webhook_port is reported as not read"
        assert any("platforms.whatsapp " in w and "Baileys" in w for w in warnings), warnings

    def test_secrets_are_never_shown(self) -> None:
        shown = repr(WhatsAppConfig(token="EAAGtoken", app_secret="appsecret", verify_token="hubword"))
        assert "EAAGtoken" not in shown and "appsecret" not in shown and "hubword" not in shown
