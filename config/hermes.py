"""Reading a Hermes Agent ``config.yaml`` as it is.

A Hermes user brings their file. Five things make it load here with every shared setting honoured:

* **Synonyms** (:data:`HERMES_SYNONYMS`): a Hermes key for a setting this project keeps elsewhere is read
  at our place, silently (it is a supported name, not a mistake).
* **Hermes forms** (:func:`apply_hermes_forms`): values Hermes writes differently, such as ``model`` as a
  bare string, ``provider: auto`` or ``""`` for "unset", and execute_code's ``mode``.
* **Messaging sections** (:func:`_read_platform_sections`): Hermes's top-level ``telegram:``,
  ``discord:``, ``slack:`` and ``matrix:`` keys that ``platforms.telegram`` / ``.discord`` / ``.slack`` / ``.matrix`` have are read there, and their
  user and chat lists are read as Hermes writes them (numbers, strings, or one comma-separated string).
* **Environment references** (:func:`expand_env_references`): ``${NAME}`` in a string value, as Hermes
  expands it.
* **Known Hermes settings** (``config.hermes_keys.HERMES_UNUSED``): a key Hermes has and this project does
  not implement is reported as such, with what covers it instead, so a user can tell it from a typo.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from fnmatch import fnmatchcase
from typing import Any

import attrs

from config.aliases import move_key
from config.discord import DiscordConfig
from config.errors import ConfigError
from config.gateway import GatewaySection
from config.hermes_keys import HERMES_UNUSED
from config.matrix import MatrixConfig
from config.mattermost import MattermostConfig
from config.email import EmailConfig
from config.plugin_providers import enabled_plugins_installed
from config.providers import KNOWN_PROVIDERS
from config.signal import SignalConfig
from config.slack import SlackConfig
from config.telegram import TelegramConfig
from config.whatsapp import WhatsAppConfig

__all__ = [
    "HERMES_NOTE",
    "HERMES_SYNONYMS",
    "apply_hermes_forms",
    "expand_env_references",
    "hermes_keys_under",
    "unused_hermes_setting",
]

HERMES_NOTE = "Hermes setting {key} is not used here: {why}"
"""The warning for a key Hermes has and this project lacks (clients count these rather than list them)."""

HERMES_SYNONYMS: dict[str, str] = {
    "agent.disabled_toolsets": "tools.disabled_toolsets",
    "command_allowlist": "approvals.allow",
    "credential_pool_strategies": "credential_pool.strategies",
    "gateway.api_server.max_concurrent_runs": "platforms.api_server.max_concurrent_runs",
    "model.model": "model.default",
    "model.name": "model.default",
    "stt_echo_transcripts": "stt.echo_transcripts",
    "platforms.api_server.extra.key": "platforms.api_server.key",
    "platforms.email.extra.address": "platforms.email.address",
    "platforms.email.extra.imap_host": "platforms.email.imap_host",
    "platforms.email.extra.skip_attachments": "platforms.email.skip_attachments",
    "platforms.email.extra.smtp_host": "platforms.email.smtp_host",
    "platforms.webhook.extra.max_body_bytes": "platforms.webhook.max_body_bytes",
    "platforms.webhook.extra.rate_limit": "platforms.webhook.rate_limit",
    "platforms.webhook.extra.routes": "platforms.webhook.routes",
    "tool_output.max_bytes": "terminal.max_output_bytes",
    "platforms.whatsapp_cloud.extra.phone_number_id": "platforms.whatsapp_cloud.phone_number_id",
    "platforms.whatsapp_cloud.extra.access_token": "platforms.whatsapp_cloud.token",
    "platforms.whatsapp_cloud.extra.app_secret": "platforms.whatsapp_cloud.app_secret",
    "platforms.whatsapp_cloud.extra.verify_token": "platforms.whatsapp_cloud.verify_token",
    "platforms.whatsapp_cloud.extra.app_id": "platforms.whatsapp_cloud.app_id",
    "platforms.whatsapp_cloud.extra.waba_id": "platforms.whatsapp_cloud.waba_id",
    "platforms.whatsapp_cloud.extra.webhook_path": "platforms.whatsapp_cloud.webhook_path",
    "platforms.whatsapp_cloud.extra.api_version": "platforms.whatsapp_cloud.api_version",
}
"""Hermes dotted key -> the dotted key of ours that holds the same setting."""

_UNLIMITED_TURNS = (
    "agent.max_turns {value!r} is not a number of turns: the iteration budget stays at its default, 90 "
    "(seed 002 and Hermes 0.19.0 alike)"
)
_HERMES_BACKEND = (
    "web.backend {value!r} is a Hermes backend not built here: web.backend stays 'auto' (SearXNG or Brave)"
)
_HERMES_SEARCH_BACKEND = (
    "web.search_backend {value!r} is a Hermes backend not built here: web.backend decides (SearXNG or Brave)"
)
_UNBUILT_BACKENDS = ("ddgs", "exa", "firecrawl", "keenable", "parallel", "tavily", "xai")
# Values Hermes writes that mean "unset" or that name something not built here: the key is dropped, so our
# default applies, with the note when there is one. "" and "auto" are Hermes's "pick for me".
_DROPPED_VALUES: dict[str, dict[object, str | None]] = {
    # Hermes 0.19.0 reads null as its default (90), silently; the words are not numbers to either.
    "agent.max_turns": {None: None, **dict.fromkeys(("none", "unlimited", "inf"), _UNLIMITED_TURNS)},
    "delegation.child_timeout_seconds": {0: None},
    "model.base_url": {"": None},
    "model.provider": {"": None, "auto": None},
    "web.backend": {"": None, **dict.fromkeys(_UNBUILT_BACKENDS, _HERMES_BACKEND)},
    "web.search_backend": {"": None, **dict.fromkeys(_UNBUILT_BACKENDS, _HERMES_SEARCH_BACKEND)},
}
# Hermes's messaging sections at the top level, and the section of ours that holds their settings.
_PLATFORM_SECTIONS: dict[str, type[GatewaySection]] = {
    "telegram": TelegramConfig, "discord": DiscordConfig, "slack": SlackConfig, "matrix": MatrixConfig,
    "mattermost": MattermostConfig, "signal": SignalConfig, "email": EmailConfig, "whatsapp_cloud": WhatsAppConfig,
}
# The platforms whose chats are numbers (the others' are text: Slack's channel ids, Matrix's rooms, phone numbers).
_NUMBERED_HOMES = ("telegram", "discord")
_ID_LISTS = ("allow_from", "group_allow_from", "group_allowed_chats", "allowed_channels", "free_response_channels")
# Hermes's names for a local OpenAI-compatible server: ``custom`` here, LM Studio at its usual address.
_LOCAL_PROVIDERS = {"ollama": None, "vllm": None, "llamacpp": None, "lmstudio": "http://127.0.0.1:1234/v1"}
_UNKNOWN_PROVIDER = (
    "{where} {value!r} is not a provider here{hint} (known: {known}); for another OpenAI-compatible endpoint "
    "use provider custom with its base_url, or install and enable (plugins.enabled) the plugin that adds it"
)
_INDEX = re.compile(r"\[\d+\]")
_ENV_REFERENCE = re.compile(r"\$\{([^}]+)\}")
_AUXILIARY_FIELDS = ("model", "provider", "base_url")
# execute_code's modes (Hermes's code_execution.mode): ``strict`` runs in a temporary directory, as here.
_CODE_MODES = {
    "strict": None,
    "project": "code_execution.mode 'project' is not honoured: execute_code always runs in a temporary "
    "directory (seed 000), as Hermes's 'strict' does",
}


def unused_hermes_setting(dotted: str) -> str | None:
    """Why the Hermes key ``dotted`` does nothing here, when it is one; None for a key Hermes lacks.

    A list index in ``dotted`` (``fallback_providers[1].api_key``) is ignored; a pattern of the
    table matches the key or one of its leading parts, segment by segment.
    """
    parts = _INDEX.sub("", dotted).split(".")
    for pattern, why in HERMES_UNUSED.items():
        wanted = pattern.split(".")
        if len(wanted) <= len(parts) and all(fnmatchcase(p, w) for p, w in zip(parts, wanted)):
            return why
    return None


def hermes_keys_under(dotted: str) -> bool:
    """Whether Hermes has settings below ``dotted`` that :func:`unused_hermes_setting` knows by name."""
    prefix = _INDEX.sub("", dotted) + "."
    return any(pattern.startswith(prefix) for pattern in HERMES_UNUSED)


def expand_env_references(value: Any, env: Mapping[str, str], found: list[str], where: str = "") -> Any:
    """``value`` (a parsed document, left unchanged) with each ``${NAME}`` in its strings replaced by ``env``'s.

    As in Hermes, a name ``env`` lacks stays as written; here a note in ``found`` names the key.
    """
    if isinstance(value, dict):
        return {k: expand_env_references(v, env, found, f"{where}.{k}" if where else str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [expand_env_references(v, env, found, f"{where}[{i}]") for i, v in enumerate(value)]
    if not isinstance(value, str):
        return value

    def substitute(match: re.Match[str]) -> str:
        name = match.group(1)
        if name in env:
            return env[name]
        found.append(f"{where} names ${{{name}}}, which is not set (left as written)")
        return match.group(0)

    return _ENV_REFERENCE.sub(substitute, value)


def apply_hermes_forms(data: dict[str, Any], found: list[str]) -> dict[str, Any]:
    """``data`` (a parsed top level, left unchanged) with Hermes's spellings turned into ours.

    Notes in ``found`` only what the user should know: a Hermes value that is not honoured, or a
    Hermes key ignored because our own key for the same setting is set too.
    """
    result = dict(data)
    if isinstance(result.get("model"), str):
        result["model"] = {"default": result["model"]} if result["model"] else {}
    for hermes, ours in HERMES_SYNONYMS.items():
        move_key(result, hermes, ours, found, kind="Hermes key")
    for dotted, dropped in _DROPPED_VALUES.items():
        _drop_value(result, dotted, dropped, found)
    _read_providers(result)
    _read_platform_sections(result, found)
    _fold_auxiliary_compression(result)
    _read_code_mode(result, found)
    caching = result.get("prompt_caching")
    if isinstance(caching, dict) and caching.get("cache_ttl") is False:
        # YAML reads a bare off/no as false, Hermes's "caching off"; the section's converter takes the words.
        result["prompt_caching"] = {**caching, "cache_ttl": None}
    if isinstance(result.get("checkpoints"), bool):
        # Hermes reads ``checkpoints: true`` as the section's switch alone.
        result["checkpoints"] = {"enabled": result["checkpoints"]}
    return result


def _drop_value(data: dict[str, Any], dotted: str, dropped: dict[object, str | None], found: list[str]) -> None:
    """Remove ``dotted`` (section.key) from ``data`` when its value is one of ``dropped``, noting why."""
    section, key = dotted.split(".")
    block = data.get(section)
    if not isinstance(block, dict) or key not in block:
        return
    value = block[key]
    if isinstance(value, (list, dict)) or value not in dropped:
        return
    data[section] = {k: v for k, v in block.items() if k != key}
    note = dropped[value]
    if note is not None:
        found.append(note.format(value=value))


def _read_platform_sections(data: dict[str, Any], found: list[str]) -> None:
    """Move Hermes's top-level ``telegram.KEY`` / ``discord.KEY`` to ``platforms.<name>.KEY`` where ours has
    KEY (the rest stays, to be reported as unused), then read each platform's id lists as strings.

    A bare top-level ``require_mention`` is Telegram's, as Hermes reads it; a platform's own Hermes names of
    the per-channel keys (Telegram's ``allowed_chats``, Matrix's ``free_response_rooms``) are read as ours.
    """
    for name, section in _PLATFORM_SECTIONS.items():
        for hermes, our_key in section.HERMES_NAMES.items():
            for where in (name, f"platforms.{name}"):
                move_key(data, f"{where}.{hermes}", f"{where}.{our_key}", found, kind="Hermes key")
        block = data.get(name)
        for key in list(block) if isinstance(block, dict) else ():
            if key in attrs.fields_dict(section):
                move_key(data, f"{name}.{key}", f"platforms.{name}.{key}", found, kind="Hermes key")
        if name == "telegram":
            move_key(data, "require_mention", "platforms.telegram.require_mention", found, kind="Hermes key")
        platforms = data.get("platforms")
        if not isinstance(platforms, dict):
            continue
        ours = platforms.get(name)
        if not isinstance(ours, dict) or not any(key in ours for key in (*_ID_LISTS, "home_channel", "channel_prompts", "mention_patterns")):
            continue
        read = {key: _id_list(value) if key in _ID_LISTS else value for key, value in ours.items()}
        if isinstance(read.get("mention_patterns"), str):  # Hermes takes one pattern as a bare string
            read["mention_patterns"] = [read["mention_patterns"]]
        if isinstance(read.get("channel_prompts"), dict):  # YAML reads a chat id key (``-100123:``) as a number
            read["channel_prompts"] = {str(key): prompt for key, prompt in read["channel_prompts"].items()}
        if "home_channel" in read:
            read["home_channel"] = _home_channel(read["home_channel"], number=name in _NUMBERED_HOMES)
        data["platforms"] = {**platforms, name: read}


def _home_channel(value: Any, *, number: bool) -> Any:
    """A home channel as the chat id ours takes (a ``number`` for Telegram's and Discord's, else text): Hermes
    writes a mapping (``platform``, ``chat_id``, ``name``), the id as a string, or a number.

    Anything else is returned as it is, for the section's check to refuse with the key's name.
    """
    if isinstance(value, dict) and "chat_id" in value:
        value = value["chat_id"]
    if number and isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value.strip())
    if not number and isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return value


def _id_list(value: Any) -> Any:
    """A user or chat list as strings: Hermes writes numbers, strings, one comma-separated string or one bare
    number (``free_response_channels: 1234``).

    Anything else is returned as it is, for the section's check to refuse with the key's name.
    """
    if isinstance(value, int) and not isinstance(value, bool):
        return [str(value)]
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    if not isinstance(value, list):
        return value
    return [str(item) if isinstance(item, int) and not isinstance(item, bool) else item.strip() if isinstance(item, str) else item for item in value]


def _read_providers(data: dict[str, Any]) -> None:
    """Hermes's local-server provider names become ``custom``; a provider this project lacks is refused.

    Read in the model section and each ``fallback_providers`` entry (anything else there is left for the
    loader to refuse).

    Another name is a plugin's provider (``config.plugin_providers``) when an installed plugin is enabled:
    which names it adds is known once the daemon loads it, and a session on a name no loaded plugin adds
    is refused there.

    Raises:
        ConfigError: a provider name that is neither ours, nor a Hermes local-server name, nor possibly an
            enabled plugin's. A warning was not enough: a typo (``custm``) sent the session, and its key,
            to the default endpoint.
    """
    plugins = data.get("plugins")
    if isinstance(data.get("model"), dict):
        data["model"] = _provider_entry("model.provider", data["model"], plugins)
    fallbacks = data.get("fallback_providers")
    if isinstance(fallbacks, list):
        data["fallback_providers"] = [
            _provider_entry(f"fallback_providers[{i}].provider", entry, plugins) if isinstance(entry, dict) else entry
            for i, entry in enumerate(fallbacks)
        ]


def _provider_entry(where: str, entry: dict[str, Any], plugins: object) -> dict[str, Any]:
    """``entry`` with Hermes's local-server provider names read as ours (a new mapping when changed).

    Raises:
        ConfigError: the provider is not one of ours, nor a local-server name, and no installed plugin
            that might add it is enabled.
    """
    provider = entry.get("provider")
    if not isinstance(provider, str) or provider in KNOWN_PROVIDERS:
        return entry
    if provider not in _LOCAL_PROVIDERS and enabled_plugins_installed(plugins):
        return entry
    if provider not in _LOCAL_PROVIDERS:
        close = difflib.get_close_matches(provider, [*KNOWN_PROVIDERS, *_LOCAL_PROVIDERS], n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        known = ", ".join(KNOWN_PROVIDERS)
        raise ConfigError(_UNKNOWN_PROVIDER.format(where=where, value=provider, hint=hint, known=known))
    address = _LOCAL_PROVIDERS[provider]
    return {**entry, "provider": "custom", **({"base_url": address} if address and not entry.get("base_url") else {})}


def _fold_auxiliary_compression(data: dict[str, Any]) -> None:
    """Hermes's per-task ``auxiliary.compression`` block fills our single auxiliary model where unset.

    Compression summaries are the side task both projects share; the block's other keys (``timeout`` ...)
    and Hermes's other task blocks (vision, title generation ...) stay behind and are reported as unused.
    """
    block = data.get("auxiliary")
    if not isinstance(block, dict) or not isinstance(block.get("compression"), dict):
        return
    task = dict(block["compression"])
    folded = {k: v for k, v in block.items() if k != "compression"}
    for key in _AUXILIARY_FIELDS:
        value = task.pop(key, None)
        if key not in folded and isinstance(value, str) and value not in ("", "auto"):
            folded[key] = value
    if task:
        folded["compression"] = task
    data["auxiliary"] = folded


def _read_code_mode(data: dict[str, Any], found: list[str]) -> None:
    """Take Hermes's ``code_execution.mode`` out of the section, noting a mode that is not honoured."""
    block = data.get("code_execution")
    if not isinstance(block, dict) or "mode" not in block:
        return
    mode = block["mode"]
    data["code_execution"] = {k: v for k, v in block.items() if k != "mode"}
    if not isinstance(mode, str) or mode not in _CODE_MODES:
        found.append(f"code_execution.mode {mode!r} is not a mode (Hermes has 'strict' and 'project'; ignored)")
    elif note := _CODE_MODES[mode]:
        found.append(note)
