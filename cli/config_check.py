"""What the CLI says about ``config.yaml``: its warnings on the terminal, and ``hermes-actors config check``.

The daemon logs the same warnings, but a person running ``chat`` or ``status``
never reads the log: an unknown key (a typo such as ``modle:``) is silently
ignored there, so the client reads the file too and says so on stderr. A file
the daemon would refuse is refused here first, with the error itself, before a
daemon is started only to exit.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, TextIO

from control.errors import EXIT_NOT_FOUND
from control.paths import home_from_env
from config.hermes import HERMES_NOTE
from config.loader import Config, ConfigError, config_warnings, load_config, load_env_file
from config.plugin_providers import installed_plugin_names
from config.providers import KNOWN_PROVIDERS

__all__ = ["checked_config", "missing_key_message", "run_config_check", "warn_config"]


_HERMES_NOTE_START = HERMES_NOTE.split("{", 1)[0]


def _print_warnings(home: Path, warnings: list[str], out: TextIO) -> None:
    """Each warning on ``out``; the notes on Hermes settings this project lacks as one line counting them.

    A Hermes user's file holds dozens of those: listing them on every ``chat`` would bury a real typo.
    ``config check`` lists them all.
    """
    path = home / "config.yaml"
    hermes = [w for w in warnings if w.startswith(_HERMES_NOTE_START)]
    for warning in warnings:
        if warning not in hermes:
            print(f"hermes-actors: warning: {path}: {warning}", file=out)
    if hermes:
        count = f"{len(hermes)} Hermes Agent setting{'s' if len(hermes) > 1 else ''}"
        print(f"hermes-actors: note: {path}: {count} not used here (`hermes-actors config check` lists them)", file=out)


def checked_config(home: Path, stream: TextIO | None = None) -> Config:
    """``home``'s configuration, each warning (unknown keys) printed to ``stream`` (stderr).

    Raises:
        ConfigError: the file cannot be read or holds a bad value.
    """
    warnings: list[str] = []
    config = load_config(home, warnings=warnings, log_warnings=False)
    _print_warnings(home, warnings, stream or sys.stderr)
    return config


def warn_config(home: Path, stream: TextIO | None = None) -> bool:
    """Print ``home``'s unknown keys, and a file that does not parse, as warnings; True when there was none
    (notes on Hermes settings this project lacks are not warnings).

    For a client whose daemon already runs (on the file as it was): values are not
    checked, so this stays cheap on ``chat``'s path to its prompt (``config check`` does).
    """
    out = stream or sys.stderr
    try:
        warnings = config_warnings(home)
    except ConfigError as exc:
        print(f"hermes-actors: warning: a daemon started now would refuse the configuration:\n{exc}", file=out)
        return False
    _print_warnings(home, warnings, out)
    return not [w for w in warnings if not w.startswith(_HERMES_NOTE_START)]


def missing_key_message(config: Config, home: Path) -> str | None:
    """What to set when the default model's provider needs a key that is nowhere (None: fine; a plugin's
    provider is the daemon's to check, once the plugin has said which variable it reads)."""
    from providers.recovery.fallback import ProviderTarget
    from providers.recovery.keys import MissingProviderKey, load_provider_keys

    model = config.model
    if model.default_provider not in KNOWN_PROVIDERS:
        return None
    target = ProviderTarget.resolve(model.default_provider, model.default, model.base_url, model.api_mode)
    try:
        load_provider_keys(config, {**load_env_file(home), **os.environ}).require(target)
    except MissingProviderKey as exc:
        return str(exc)
    return None


#: How long loading the enabled plugins (to learn the providers they add) may take.
PROBE_SECONDS = 60.0


def plugin_provider_error(config: Config) -> str | None:
    """Why a provider the file names, that is not built in, is added by none of the enabled installed plugins
    (None: each is, or none is named).

    Which names a plugin adds is known only by running its ``register``: the plugins are loaded as the
    daemon loads them, in a process of their own (``tools.plugins.probe``).
    """
    wanted = {
        where: provider for where, provider in (
            ("model.provider", config.model.provider),
            *((f"fallback_providers[{i}].provider", entry.provider) for i, entry in enumerate(config.fallback_providers)),
        ) if provider and provider not in KNOWN_PROVIDERS
    }
    if not wanted:
        return None
    installed = installed_plugin_names()
    names = [name for name in config.plugins.enabled if name in installed and name not in config.plugins.disabled]
    try:
        done = subprocess.run(
            [sys.executable, "-m", "tools.plugins.probe", *names], capture_output=True, text=True, timeout=PROBE_SECONDS,
            stdin=subprocess.DEVNULL,
        )
        found: dict[str, dict[str, Any]] = json.loads(done.stdout)
    except subprocess.TimeoutExpired:
        return f"the enabled plugins ({', '.join(names)}) did not finish loading within {PROBE_SECONDS:g} s"
    except json.JSONDecodeError:
        return f"the enabled plugins ({', '.join(names)}) could not be loaded: {done.stderr.strip()[-500:]}"
    added = {provider for plugin in found.values() for provider in plugin["providers"]}
    missing = [f"{where} {provider!r}" for where, provider in wanted.items() if provider not in added]
    if not missing:
        return None
    states = "; ".join(
        f"{name}: failed to load: {plugin['error']}" if plugin["error"] else f"{name} adds {', '.join(plugin['providers']) or 'no provider'}"
        for name, plugin in found.items()
    )
    return f"{', '.join(missing)}: no enabled plugin adds it ({states})"


def run_config_check(args: argparse.Namespace) -> int:
    """``hermes-actors config check``: 0 when the file is valid, 2 when not; warnings on stderr.

    With ``--json``: ``{"ok", "path", "error", "warnings", "missing_key"}``.
    """
    home = home_from_env()
    path = home / "config.yaml"
    warnings: list[str] = []
    error: str | None = None
    missing: str | None = None
    try:
        config = load_config(home, warnings=warnings, log_warnings=False)
    except ConfigError as exc:
        error = str(exc)
    else:
        error = plugin_provider_error(config)
        missing = missing_key_message(config, home) if error is None else None
    if args.json:
        document = {"ok": error is None, "path": str(path), "error": error, "warnings": warnings, "missing_key": missing}
        sys.stdout.write(json.dumps(document, ensure_ascii=False) + "\n")
        return 0 if error is None else EXIT_NOT_FOUND
    for warning in warnings:
        print(f"hermes-actors: warning: {path}: {warning}", file=sys.stderr)
    if error is not None:
        print(f"hermes-actors: {error}", file=sys.stderr)
        return EXIT_NOT_FOUND
    if missing is not None:
        print(f"hermes-actors: warning: {missing}", file=sys.stderr)
    shown = path if path.exists() else f"{path} (absent: defaults)"
    print(f"{shown}: ok")
    return 0
