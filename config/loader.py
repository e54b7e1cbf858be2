"""Loading ``HERMES_ACTORS_HOME/config.yaml`` into one typed :class:`Config`.

A missing file means defaults. A value of the wrong type or out of range is a
:class:`ConfigError` naming the key and the file; an unknown key is a warning
(logged and returned), never a crash, so an older daemon reads a newer file.
Scalars are strict: ``"12"`` is not an integer and ``"false"`` is not false.

Before the file is checked, deprecated key names move to their new ones
(``config.aliases``) and Hermes Agent's spellings to ours (``config.hermes``); a
Hermes setting this project lacks is a warning of its own, told apart from a typo.
"""

from __future__ import annotations

import difflib
import logging
import os
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
import yaml
from attrs import validators as v

from config.aliases import apply_deprecated_keys
from config.api import PlatformsConfig, auth_disabled_refusal
from config.checkpoints import CheckpointsConfig
from config.curator import CuratorConfig
from config.daemon import DaemonConfig, HostCount
from config.delegation import DelegationConfig
from config.errors import ConfigError
from config.hermes import (
    HERMES_NOTE,
    apply_hermes_forms,
    expand_env_references,
    hermes_keys_under,
    unused_hermes_setting,
)
from config.hooks import HooksConfig, PluginsConfig
from config.mcp import McpEntry, parse_mcp_servers
from config.plugin_platform import plugin_platform_sections
from config.plugin_providers import enabled_plugins_installed
from config.pricing import ModelPrice
from config.providers import AuxiliaryConfig, ModelConfig, PromptCachingConfig, StreamingConfig
from config.recovery import CredentialPoolConfig, FallbackProviderConfig, RetryConfig
from config.sandbox import SANDBOX_MODES, CodeExecutionConfig, SandboxConfig
from config.session import AgentConfig, ClarifyConfig, CompressionConfig, DisplayConfig, GuardrailsConfig
from config.skills import SkillsConfig
from config.store import StoreConfig
from config.stt import SttConfig
from config.browser import BrowserConfig
from config.terminal import ApprovalsConfig, TerminalConfig, WebConfig
from config.timezone import check_zone
from config.tools import MemoryConfig, ToolsConfig
from messages.untrusted import MAX_JSON_DEPTH, NUMBER_TOO_LONG, JsonLimitExceeded, is_number_too_long, repair_json

__all__ = ["Config", "ConfigError", "config_warnings", "home_dir", "known_sections", "load_config", "load_env_file", "parse_config_text"]

log = logging.getLogger("hermes_actors.config")

HOME_VARIABLE = "HERMES_ACTORS_HOME"


@attrs.frozen
class Config:
    """Every section of ``config.yaml``, by its yaml key."""

    model: ModelConfig = attrs.Factory(ModelConfig)
    prompt_caching: PromptCachingConfig = attrs.Factory(PromptCachingConfig)
    streaming: StreamingConfig = attrs.Factory(StreamingConfig)
    auxiliary: AuxiliaryConfig = attrs.Factory(AuxiliaryConfig)
    retry: RetryConfig = attrs.Factory(RetryConfig)
    credential_pool: CredentialPoolConfig = attrs.Factory(CredentialPoolConfig)
    fallback_providers: tuple[FallbackProviderConfig, ...] = ()
    agent: AgentConfig = attrs.Factory(AgentConfig)
    clarify: ClarifyConfig = attrs.Factory(ClarifyConfig)
    compression: CompressionConfig = attrs.Factory(CompressionConfig)
    tool_loop_guardrails: GuardrailsConfig = attrs.Factory(GuardrailsConfig)
    display: DisplayConfig = attrs.Factory(DisplayConfig)
    delegation: DelegationConfig = attrs.Factory(DelegationConfig)
    code_execution: CodeExecutionConfig = attrs.Factory(CodeExecutionConfig)
    sandbox: SandboxConfig = attrs.Factory(SandboxConfig)
    terminal: TerminalConfig = attrs.Factory(TerminalConfig)
    approvals: ApprovalsConfig = attrs.Factory(ApprovalsConfig)
    web: WebConfig = attrs.Factory(WebConfig)
    browser: BrowserConfig = attrs.Factory(BrowserConfig)
    store: StoreConfig = attrs.Factory(StoreConfig)
    tools: ToolsConfig = attrs.Factory(ToolsConfig)
    memory: MemoryConfig = attrs.Factory(MemoryConfig)
    skills: SkillsConfig = attrs.Factory(SkillsConfig)
    curator: CuratorConfig = attrs.Factory(CuratorConfig)
    stt: SttConfig = attrs.Factory(SttConfig)
    checkpoints: CheckpointsConfig = attrs.Factory(CheckpointsConfig)
    daemon: DaemonConfig = attrs.Factory(DaemonConfig)
    platforms: PlatformsConfig = attrs.Factory(PlatformsConfig)
    pricing: dict[str, ModelPrice] = attrs.Factory(dict)
    # Read entry by entry (config.mcp): one bad server entry is that server's error, not the file's.
    mcp_servers: dict[str, McpEntry] = attrs.Factory(dict)
    hooks: HooksConfig = attrs.Factory(HooksConfig)
    plugins: PluginsConfig = attrs.Factory(PluginsConfig)
    # Hermes's top-level key: the user's IANA time zone (unset or "": HERMES_TIMEZONE, TZ, the system's).
    timezone: str | None = attrs.field(
        default=None, converter=lambda value: value or None, validator=v.optional([v.instance_of(str), check_zone])
    )


def home_dir(environ: Mapping[str, str] | None = None) -> Path:
    """``HERMES_ACTORS_HOME``, or ``~/.hermes-actors`` when unset."""
    env = os.environ if environ is None else environ
    value = env.get(HOME_VARIABLE)
    return Path(value).expanduser() if value else Path.home() / ".hermes-actors"


def load_config(home: Path, *, warnings: list[str] | None = None, log_warnings: bool = True) -> Config:
    """Read ``home/config.yaml`` (defaults when absent).

    Args:
        home: the HERMES_ACTORS_HOME directory.
        warnings: when given, the warnings (unknown keys, deprecated names, Hermes settings) are appended here too.
        log_warnings: False for a caller that shows the warnings itself (the CLI, whose
            unconfigured logging would print them a second time).

    Raises:
        ConfigError: unreadable YAML, or a value of the wrong type or range.
    """
    path = home / "config.yaml"
    found: list[str] = []
    cleaned = _read_known(path, found)
    try:
        # Structuring adds the mcp_servers entries' warnings; those found before it count even when it fails.
        return Config() if cleaned is None else _structure(cleaned, path, found)
    finally:
        for warning in found if log_warnings else ():
            log.warning("%s: %s", path, warning)
        if warnings is not None:
            warnings.extend(found)


def config_warnings(home: Path) -> list[str]:
    """The warnings of ``home/config.yaml`` (as :func:`load_config` gives them), its values left unchecked.

    Cheap (no converter is loaded): for a client whose daemon already runs on the file.

    Raises:
        ConfigError: the file cannot be read, is not valid YAML, or is not a mapping of sections.
    """
    found: list[str] = []
    _read_known(home / "config.yaml", found)
    return found


def _read_known(path: Path, found: list[str]) -> dict[str, Any] | None:
    """The document at ``path`` without its unknown keys (each appended to ``found``); None: no file or empty."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not valid UTF-8 (byte {exc.start})") from None
    data = parse_config_text(text, path)
    if data is None:
        return None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of sections")
    try:
        # ${NAME} comes from the environment over HERMES_ACTORS_HOME/.env, as the daemon reads its keys.
        data = expand_env_references(data, {**load_env_file(path.parent), **os.environ}, found)
        return known_sections(data, found)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None


def known_sections(data: dict[str, Any], found: list[str]) -> dict[str, Any]:
    """A parsed ``config.yaml`` as the sections of ours: deprecated keys and Hermes's spellings read at our
    place, and every key we do not read dropped, each noted in ``found`` (as :func:`load_config` notes them).

    ``${NAME}`` references are left as they are: ``import-hermes`` writes the result as a file.

    Raises:
        ConfigError: a section that is not a mapping.
    """
    ours = apply_hermes_forms(apply_deprecated_keys(data, found), found)
    platforms = ours.get("platforms")
    if isinstance(platforms, dict) and enabled_plugins_installed(ours.get("plugins")):
        ours = {**ours, "platforms": plugin_platform_sections(platforms, attrs.fields_dict(PlatformsConfig))}
    cleaned: dict[str, Any] = _drop_unknown(Config, ours, "", found)
    return cleaned


def parse_config_text(text: str, path: Path) -> Any:
    """The YAML document ``text`` (read from ``path``, named in errors), its strings repaired; every way a
    hostile file can fail is a ConfigError."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(_yaml_message(exc, path)) from exc
    except RecursionError:
        raise ConfigError(f"{path}: nested too deeply to read") from None
    except ValueError as exc:
        if not is_number_too_long(exc):
            raise
        raise ConfigError(f"{path}: holds {NUMBER_TOO_LONG}") from None
    try:
        # Lone surrogates (a "\udc80" escape) would fail later, far from here; an alias that
        # contains itself is infinitely deep.
        return repair_json(data, max_depth=MAX_JSON_DEPTH)
    except JsonLimitExceeded as exc:
        raise ConfigError(f"{path}: {exc}") from None


def _yaml_message(exc: yaml.YAMLError, path: Path) -> str:
    """A parse error as a person reads it: where (1-based line and column), what, and the line itself."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    if mark is None:
        return f"{path}: not valid YAML: {problem}"
    lines = [f"{path}, line {mark.line + 1}, column {mark.column + 1}: not valid YAML: {problem}"]
    context = getattr(exc, "context", None)
    if context:
        lines.append(f"  ({context})")
    source = (mark.buffer or "").rstrip("\0").splitlines()
    if mark.line < len(source):
        lines += [f"  {source[mark.line]}", "  " + " " * mark.column + "^"]
    return "\n".join(lines)


def _structure(data: dict[str, Any], path: Path, found: list[str]) -> Config:
    # Imported here: a CLI client that only lists warnings must not pay for the converter.
    import cattrs

    from messages.codec import format_field_error, make_message_converter

    converter = make_message_converter()
    converter.register_structure_hook_func(lambda cls: cls == tuple[str, ...], _string_list)
    converter.register_structure_hook(HostCount, lambda value, _: value)
    hints = typing.get_type_hints(Config)
    sections: dict[str, Any] = {}
    for field in attrs.fields(Config):
        if field.name not in data:
            continue
        if field.name == "mcp_servers":
            try:
                sections[field.name] = parse_mcp_servers(data[field.name], found)
            except TypeError as exc:
                raise ConfigError(f"{path}: {exc}") from exc
            continue
        try:
            sections[field.name] = converter.structure(data[field.name], hints[field.name])
        except cattrs.BaseValidationError as exc:
            details = "; ".join(cattrs.transform_error(exc, path=field.name, format_exception=format_field_error))
            raise ConfigError(f"{path}: {details}") from exc
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{path}: {field.name}: {exc}") from exc
    try:
        config = Config(**sections)
    except (TypeError, ValueError) as exc:  # a top-level key's own check (timezone)
        raise ConfigError(f"{path}: {exc}") from exc
    # The retry count's key is Hermes's agent.api_max_retries; the recovery layer reads it from ``retry``.
    config = attrs.evolve(config, retry=attrs.evolve(config.retry, max_retries=config.agent.api_max_retries))
    api_mode = config.platforms.api_server.sandbox
    if api_mode is not None and SANDBOX_MODES.index(api_mode) > SANDBOX_MODES.index(config.sandbox.max_mode):
        raise ConfigError(
            f"{path}: platforms.api_server.sandbox {api_mode!r} is wider than sandbox.max_mode {config.sandbox.max_mode!r}"
        )
    _check_webhooks(config, path)
    refusal = auth_disabled_refusal(config.platforms.api_server, config.sandbox)
    if refusal is not None:
        raise ConfigError(f"{path}: {refusal}")
    return config


def _check_webhooks(config: Config, path: Path) -> None:
    """The webhooks are served by the API's server, and their sandbox is never wider than ``sandbox.max_mode``.

    Raises:
        ConfigError: either is not so.
    """
    webhook = config.platforms.webhook
    if webhook.enabled and not config.platforms.api_server.enabled:
        raise ConfigError(
            f"{path}: platforms.webhook.enabled needs platforms.api_server.enabled: the hooks are served on its port"
        )
    for name, route in webhook.routes.items():
        if route.sandbox is not None and SANDBOX_MODES.index(route.sandbox) > SANDBOX_MODES.index(config.sandbox.max_mode):
            raise ConfigError(
                f"{path}: platforms.webhook.routes.{name}.sandbox {route.sandbox!r} is wider than"
                f" sandbox.max_mode {config.sandbox.max_mode!r}"
            )


def _string_list(value: Any, _: Any) -> tuple[str, ...]:
    """A YAML list of strings as a tuple; one string alone is refused (a tuple of its characters would
    load silently: ``deny: "rm *"`` would forbid every command holding an ``r``)."""
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"expected a list of strings, got {type(value).__name__} {value!r}")
    for item in value:
        if not isinstance(item, str):
            raise TypeError(f"expected a list of strings, got {type(item).__name__} {item!r} in it")
    return tuple(value)


def _drop_unknown(cls: Any, data: Any, prefix: str, found: list[str]) -> Any:
    """``data`` without the keys ``cls`` does not know, each one reported.

    ``cls`` is a section's type: an attrs class, a tuple of them (a list section such as
    ``fallback_providers``) or a dict of them by name (``platforms.webhook.routes``), whose entries are
    checked one by one.
    """
    if typing.get_origin(cls) is tuple and isinstance(data, list):
        element = typing.get_args(cls)[0]
        name = prefix.rstrip(".")
        return [_drop_unknown(element, item, f"{name}[{index}].", found) for index, item in enumerate(data)]
    if typing.get_origin(cls) is dict and isinstance(data, dict) and attrs.has(typing.get_args(cls)[1]):
        element = typing.get_args(cls)[1]  # named entries (webhook routes), each checked as its section
        return {key: _drop_unknown(element, item, f"{prefix}{key}.", found) for key, item in data.items()}
    if not attrs.has(cls):
        return data
    if data is None:  # ``skills:`` with nothing under it, as YAML reads it: the section's defaults
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{prefix.rstrip('.') or 'the top level'} must be a mapping, got {type(data).__name__}")
    hints = typing.get_type_hints(cls)
    cleaned: dict[str, Any] = {}
    for key, value in data.items():
        if key in hints:
            cleaned[key] = _drop_unknown(hints[key], value, f"{prefix}{key}.", found)
        else:
            _report_unknown(f"{prefix}{key}", value, found, known=list(hints))
    return cleaned


def _report_unknown(dotted: str, value: Any, found: list[str], known: list[str] | None = None) -> None:
    """Note a key we do not read: a Hermes setting this project lacks (and why), or an unknown key,
    with the ``known`` key of its section it most resembles (a typo such as ``defualt``).

    A mapping that holds Hermes settings by name (``tool_output``) is reported key by key.
    """
    why = unused_hermes_setting(dotted)
    if why is not None:
        found.append(HERMES_NOTE.format(key=dotted, why=why))
    elif isinstance(value, dict) and value and hermes_keys_under(dotted):
        for key, child in value.items():
            _report_unknown(f"{dotted}.{key}", child, found)
    else:
        parent, _, key = dotted.rpartition(".")
        close = difflib.get_close_matches(key, known or [], n=1, cutoff=0.7)
        hint = f": did you mean {parent + '.' if parent else ''}{close[0]}?" if close else ""
        found.append(f"unknown key {dotted} (ignored){hint}")


def load_env_file(home: Path) -> dict[str, str]:
    """The ``KEY=VALUE`` lines of ``home/.env`` (keys for providers and web backends).

    Comments, blank lines and ``export`` prefixes are allowed; quotes around a
    value are removed. The process environment is not changed.
    """
    path = home / ".env"
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return {}
    values: dict[str, str] = {}
    for number, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        line = line.removeprefix("export ").strip()
        key, sep, value = line.partition("=")
        key = key.strip()
        if not sep or not key.isidentifier():
            log.warning("%s:%d: not a KEY=VALUE line (ignored)", path, number)
            continue
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        values[key] = value
    return values
