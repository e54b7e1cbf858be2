"""Reading a Hermes Agent ``config.yaml`` as it is.

A Hermes user brings their file. Four things make it load here with every shared setting honoured:

* **Synonyms** (:data:`HERMES_SYNONYMS`): a Hermes key for a setting this project keeps elsewhere is read
  at our place, silently (it is a supported name, not a mistake).
* **Hermes forms** (:func:`apply_hermes_forms`): values Hermes writes differently, such as ``model`` as a
  bare string, ``provider: auto`` or ``""`` for "unset", and execute_code's ``mode``.
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

from config.aliases import move_key
from config.errors import ConfigError
from config.hermes_keys import HERMES_UNUSED
from config.providers import KNOWN_PROVIDERS

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
    "compression.summary_model": "auxiliary.model",
    "credential_pool_strategies": "credential_pool.strategies",
    "gateway.api_server.max_concurrent_runs": "platforms.api_server.max_concurrent_runs",
    "model.model": "model.default",
    "platforms.api_server.extra.key": "platforms.api_server.key",
    "tool_output.max_bytes": "terminal.max_output_bytes",
}
"""Hermes dotted key -> the dotted key of ours that holds the same setting."""

_UNLIMITED_TURNS = (
    "agent.max_turns {value!r} (unlimited in Hermes) is not honoured: the iteration budget stays at its "
    "default (seed 002)"
)
_HERMES_BACKEND = (
    "web.backend {value!r} is a Hermes backend not built here: web.backend stays 'auto' (SearXNG or Brave)"
)
# Values Hermes writes that mean "unset" or that name something not built here: the key is dropped, so our
# default applies, with the note when there is one. "" and "auto" are Hermes's "pick for me".
_DROPPED_VALUES: dict[str, dict[object, str | None]] = {
    "agent.max_turns": dict.fromkeys((None, "none", "unlimited", "inf"), _UNLIMITED_TURNS),
    "delegation.child_timeout_seconds": {0: None},
    "model.base_url": {"": None},
    "model.provider": {"": None, "auto": None},
    "web.backend": {"": None, **dict.fromkeys(("exa", "firecrawl", "keenable", "parallel", "tavily"), _HERMES_BACKEND)},
}
# Hermes's names for a local OpenAI-compatible server: ``custom`` here, LM Studio at its usual address.
_LOCAL_PROVIDERS = {"ollama": None, "vllm": None, "llamacpp": None, "lmstudio": "http://127.0.0.1:1234/v1"}
_UNKNOWN_PROVIDER = (
    "{where} {value!r} is not a provider here{hint} (known: {known}); for another OpenAI-compatible endpoint "
    "use provider custom with its base_url"
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
    _fold_auxiliary_compression(result)
    _read_code_mode(result, found)
    caching = result.get("prompt_caching")
    if isinstance(caching, dict) and caching.get("cache_ttl") is False:
        # YAML reads a bare off/no as false, Hermes's "caching off"; the section's converter takes the words.
        result["prompt_caching"] = {**caching, "cache_ttl": None}
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


def _read_providers(data: dict[str, Any]) -> None:
    """Hermes's local-server provider names become ``custom``; a provider this project lacks is refused.

    Read in the model section and each ``fallback_providers`` entry (anything else there is left for the
    loader to refuse).

    Raises:
        ConfigError: a provider name that is neither ours nor a Hermes local-server name. A warning was
            not enough: a typo (``custm``) sent the session, and its key, to the default endpoint.
    """
    if isinstance(data.get("model"), dict):
        data["model"] = _provider_entry("model.provider", data["model"])
    fallbacks = data.get("fallback_providers")
    if isinstance(fallbacks, list):
        data["fallback_providers"] = [
            _provider_entry(f"fallback_providers[{i}].provider", entry) if isinstance(entry, dict) else entry
            for i, entry in enumerate(fallbacks)
        ]


def _provider_entry(where: str, entry: dict[str, Any]) -> dict[str, Any]:
    """``entry`` with Hermes's local-server provider names read as ours (a new mapping when changed).

    Raises:
        ConfigError: the provider is not one of ours nor a local-server name.
    """
    provider = entry.get("provider")
    if not isinstance(provider, str) or provider in KNOWN_PROVIDERS:
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
    elif _CODE_MODES[mode]:
        found.append(_CODE_MODES[mode])
