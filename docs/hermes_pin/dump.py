"""Dump what Hermes Agent 0.19.0 says about itself, as JSON fixtures.

Runs inside a throwaway virtualenv that holds the ``hermes-agent==0.19.0`` wheel (``pin.py`` makes it and
calls this), never in the project's own environment: it imports Hermes's modules. Each fixture is read from
Hermes's code as shipped, so a test comparing against it compares against 0.19.0 itself:

- ``config_defaults.json``: every leaf key of ``hermes_cli.config.DEFAULT_CONFIG`` (dotted) and its default;
- ``tool_schemas.json``: the schema Hermes's tool registry hands the model, for every registered tool;
- ``guard_verdicts.json``: for each command of ``command_corpus.txt``, what Hermes's command guard decides.
"""

from __future__ import annotations

import json
import os
import sys
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
