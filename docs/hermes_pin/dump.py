"""Dump what Hermes Agent 0.19.0 says about itself, as JSON fixtures.

Runs inside a throwaway virtualenv that holds the ``hermes-agent==0.19.0`` wheel (``pin.py`` makes it and
calls this), never in the project's own environment: it imports Hermes's modules. Each fixture is read from
Hermes's code as shipped, so a test comparing against it compares against 0.19.0 itself:

- ``config_defaults.json``: every leaf key of ``hermes_cli.config.DEFAULT_CONFIG`` (dotted) and its default;
- ``config_extra_keys.json``: the keys Hermes reads that ``DEFAULT_CONFIG`` leaves out: the interactive CLI's
  own defaults, the other top-level keys its config check accepts, the messaging gateway's per-platform keys,
  and the ``model`` mapping's keys;
- ``tool_schemas.json``: the schema Hermes's tool registry hands the model, for every registered tool;
- ``guard_verdicts.json``: for each command of ``command_corpus.txt``, what Hermes's command guard decides.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import json
import os
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERMES_VERSION = "0.19.0"


def _leaves(section: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """Each dotted leaf of a nested mapping; an empty mapping is a leaf of its own (a free-form section)."""
    for key, value in section.items():
        if isinstance(value, dict) and value:
            yield from _leaves(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value


def config_defaults() -> dict[str, Any]:
    """Hermes's config keys and their defaults."""
    from hermes_cli.config import DEFAULT_CONFIG

    return {"hermes_version": HERMES_VERSION, "source": "hermes_cli/config.py DEFAULT_CONFIG",
            "defaults": dict(_leaves(DEFAULT_CONFIG))}


def config_extra_keys() -> dict[str, Any]:
    """The keys Hermes reads beyond ``DEFAULT_CONFIG``, each list read from the code that reads it."""
    import cli
    from gateway.config import Platform, PlatformConfig
    from hermes_cli.config import _EXTRA_KNOWN_ROOT_KEYS, DEFAULT_CONFIG

    platforms = {p.value for p in Platform} | Platform._scan_bundled_plugin_platforms()
    platforms.discard("local")  # the CLI itself, not a platform with a config block
    fields = {f.name: (f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default)
              for f in dataclasses.fields(PlatformConfig)}
    return {"hermes_version": HERMES_VERSION,
            "source": "cli.py load_cli_config; hermes_cli/config.py _EXTRA_KNOWN_ROOT_KEYS; gateway/config.py "
            "PlatformConfig and load_gateway_config; hermes_cli/runtime_provider.py and _normalize_root_model_keys",
            # The CLI starts from defaults of its own (clarify.timeout ...); with no config.yaml these are they.
            "cli_defaults": {key: value for key, value in _leaves(cli.load_cli_config())
                             if key not in dict(_leaves(DEFAULT_CONFIG))},
            "root_keys": sorted(_EXTRA_KNOWN_ROOT_KEYS),
            "platforms": sorted(platforms),
            "platform_fields": fields,
            "platform_shared_keys": _platform_shared_keys(),
            "model_keys": _model_keys()}


def _platform_shared_keys() -> dict[str, list[str]]:
    """Key -> the platforms whose block it is read from (``["*"]``: every one), as the gateway's loader says.

    ``load_gateway_config`` copies these from a platform's block (``platforms.<name>`` or a top-level
    ``<name>:``) into its settings, each behind a test ``"key" in platform_cfg``, some only for the
    platforms a ``plat == Platform.X`` / ``plat in {...}`` beside it names: those tests are read here.
    """
    from gateway import config as gateway_config

    tree = ast.parse(textwrap.dedent(inspect.getsource(gateway_config.load_gateway_config)))
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    keys: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        key = _probed_key(node)
        if key is None:
            continue
        beside = parents[node].values if isinstance(parents[node], ast.BoolOp) else []
        named = [p for other in beside if other is not node for p in _named_platforms(other, gateway_config.Platform)]
        keys.setdefault(key, set()).update(named or ["*"])
    return {key: sorted(where) for key, where in sorted(keys.items())}


def _probed_key(node: ast.AST) -> str | None:
    """``"key"`` of a test ``"key" in platform_cfg``; None for any other node."""
    if (isinstance(node, ast.Compare) and isinstance(node.ops[0], ast.In)
            and isinstance(node.left, ast.Constant) and isinstance(node.left.value, str)
            and isinstance(node.comparators[0], ast.Name) and node.comparators[0].id == "platform_cfg"):
        return node.left.value
    return None


def _named_platforms(node: ast.AST, platform: Any) -> list[str]:
    """The platforms a test ``plat == Platform.X`` or ``plat in {Platform.X, ...}`` names."""
    if not (isinstance(node, ast.Compare) and isinstance(node.left, ast.Name) and node.left.id == "plat"):
        return []
    right = node.comparators[0]
    members = right.elts if isinstance(right, (ast.Set, ast.Tuple, ast.List)) else [right]
    return [platform[m.attr].value for m in members if isinstance(m, ast.Attribute)]


def _model_keys() -> list[str]:
    """The keys of the ``model`` mapping Hermes reads, each shown by giving it a value and seeing it used.

    ``provider``, ``base_url``, ``api_key`` and ``api_mode`` come back from Hermes's runtime provider
    resolution; ``default`` and ``context_length`` are where its config normaliser puts the model's name
    and a top-level ``context_length``, and it reads the model's name from the aliases ``model`` and ``name``.
    """
    import yaml
    from hermes_cli.config import _normalize_root_model_keys, get_config_path
    from hermes_cli.runtime_provider import resolve_runtime_provider

    probe = {"provider": "custom", "base_url": "http://127.0.0.1:9/v1", "api_key": "probe-key",
             "api_mode": "anthropic_messages"}
    get_config_path().write_text(yaml.safe_dump({"model": probe}), encoding="utf-8")
    runtime = resolve_runtime_provider()
    read = {key for key, value in probe.items() if runtime.get(key) == value}
    normalised = _normalize_root_model_keys({"context_length": 12345, "model": {"name": "probe-model"}})["model"]
    aliases = {alias for alias in ("model", "name")
               if _normalize_root_model_keys({"model": {alias: "probe-model"}})["model"].get("default") == "probe-model"}
    get_config_path().unlink()
    return sorted(read | set(normalised) | aliases)


def tool_schemas() -> dict[str, Any]:
    """Every tool Hermes registers, with the schema (name, description, parameters) the model sees."""
    import model_tools  # noqa: F401  (importing it registers every built-in tool)
    from tools.registry import registry

    names = sorted(registry.get_all_tool_names())
    return {"hermes_version": HERMES_VERSION, "source": "tools.registry.registry.get_schema",
            "tools": {name: registry.get_schema(name) for name in names}}


def guard_verdicts(corpus: Path) -> dict[str, Any]:
    """Hermes's verdict on each command of the corpus: ``hardline``, ``sudo_stdin``, ``dangerous`` or ``safe``."""
    from tools import approval

    verdicts: dict[str, Any] = {}
    for line in corpus.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        command = json.loads(line) if line.startswith('"') else line
        hardline, hard_why = approval.detect_hardline_command(command)
        sudo, sudo_why = approval._check_sudo_stdin_guard(command)
        dangerous, _key, why = approval.detect_dangerous_command(command)
        if hardline:
            verdicts[command] = {"verdict": "hardline", "why": hard_why}
        elif sudo:
            verdicts[command] = {"verdict": "sudo_stdin", "why": sudo_why}
        elif dangerous:
            verdicts[command] = {"verdict": "dangerous", "why": why}
        else:
            verdicts[command] = {"verdict": "safe", "why": None}
    return {"hermes_version": HERMES_VERSION, "source": "tools/approval.py detect_hardline_command, "
            "_check_sudo_stdin_guard, detect_dangerous_command", "verdicts": verdicts}


def main(out: Path) -> None:
    """Write the fixtures into ``out`` (the corpus is read from there too)."""
    _write(out / "config_defaults.json", config_defaults())
    _write(out / "config_extra_keys.json", config_extra_keys())
    _write(out / "tool_schemas.json", tool_schemas())
    corpus = out / "command_corpus.txt"
    if corpus.exists():
        _write(out / "guard_verdicts.json", guard_verdicts(corpus))


def _write(path: Path, data: dict[str, Any]) -> None:
    """Store ``data``, with the throwaway ``HERMES_HOME`` written as the ``~/.hermes`` a user would see."""
    text = json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False, default=repr)
    path.write_text(text.replace(os.environ["HERMES_HOME"], "~/.hermes") + "\n", encoding="utf-8")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
