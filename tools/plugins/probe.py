"""``python -m tools.plugins.probe NAME ...``: load the named installed plugins as the daemon does, and print
what each registers as JSON (``{"NAME": {"providers": [...], "platforms": [...], "error": ...}}``).

``config check`` runs it in a process of its own: which provider names a plugin adds is known only by
running its ``register``, and a client never imports a plugin (nor trio) into itself; a plugin that hangs
or crashes there ends with that process.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

from tools.plugins.context import PluginContext
from tools.plugins.loader import discover, run_register

__all__ = ["probe"]


def probe(names: Sequence[str]) -> dict[str, dict[str, Any]]:
    """What each installed plugin of ``names`` registers, or why it failed to load."""
    found: dict[str, dict[str, Any]] = {}
    for entry in discover():
        if entry.name in names and entry.name not in found:
            ctx = PluginContext(entry.name)
            error = run_register(entry, ctx)
            found[entry.name] = {
                "providers": [provider.name for provider in ctx.providers],
                "platforms": [platform.name for platform in ctx.platforms],
                "error": error,
            }
    return found


if __name__ == "__main__":
    sys.stdout.write(json.dumps(probe(sys.argv[1:])) + "\n")
