"""What the agent keeps and what the learning loop changed: ``hermes-actors memory show|log`` and the
changelog lines ``skills log`` prints.

Run locally, no daemon needed: the memory stores and the changelog are files of ``HERMES_ACTORS_HOME``
(``memories/``, ``learning/changes.jsonl``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import attrs

from cli.commands import print_json
from cli.config_check import checked_config
from config.tools import MemoryConfig
from control.errors import EXIT_FAILURE
from control.paths import home_from_env
from tools.learning_log import LearnedChange, read_changes
from tools.memory import MemoryStore, Target

__all__ = ["print_changes", "run_memory_command"]

#: Review changes ``memory show`` lists under the entries.
_SHOWN_CHANGES = 5
_MEMORY_STORES = ("memory", "user")


def print_changes(changes: Sequence[LearnedChange], as_json: bool, nothing: str) -> None:
    """The review's ``changes``, oldest first, one line each: when, which session, what and why."""
    if as_json:
        print_json({"changes": [attrs.asdict(change) for change in changes]})
        return
    if not changes:
        print(nothing)
    for change in changes:
        print(f"{change.at}  {change.session_id}  {change.describe()}")


def run_memory_command(args: argparse.Namespace) -> int:
    """Run ``memory show`` (the default) or ``memory log``; the exit status."""
    home = home_from_env()
    config = checked_config(home)
    try:
        if args.verb == "log":
            print_changes(read_changes(home, _MEMORY_STORES, args.limit), args.json, "The background review has changed no memory yet.")
            return 0
        return _show(home, config.memory, args.json)
    except OSError as exc:
        if args.json:
            print_json({"error": {"code": "io", "message": str(exc)}})
        print(f"hermes-actors: {exc.filename or ''}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_FAILURE


def _show(home: Path, config: MemoryConfig, as_json: bool) -> int:
    store = MemoryStore(home, config)
    targets: list[Target] = [target for target in ("memory", "user") if store.enabled(target)]
    snapshots = [store.read_blocking(target) for target in targets]
    changes = read_changes(home, _MEMORY_STORES, _SHOWN_CHANGES)
    if as_json:
        print_json({"stores": [snapshot.to_dict() for snapshot in snapshots],
                    "changes": [attrs.asdict(change) for change in changes]})
        return 0
    for snapshot in snapshots:
        title = "MEMORY.md (the agent's notes)" if snapshot.target == "memory" else "USER.md (the user profile)"
        print(f"{title} {snapshot.usage}")
        print("\n".join(f"  - {entry}" for entry in snapshot.entries) or "  (empty)")
    if changes:
        print("\nChanged lately by the background review (hermes-actors memory log for more):")
        print_changes(changes, False, "")
    return 0
