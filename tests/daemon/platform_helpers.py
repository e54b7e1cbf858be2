"""What the daemon tests of a chat platform ask the daemon: its bot's details, whether it is connected,
what the model was asked, and the pairing CLI's answers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.daemon.helpers import ScriptedProviderProcess, inspect_json, run_cli
from tests.daemon.telegram_daemon import wait

__all__ = ["bot_details", "pairing", "user_texts", "wait_connected"]


def bot_details(home: Path, platform: str) -> dict[str, Any]:
    """``inspect platform/<platform> --json``'s details (empty while the bot is not running), asked in-process."""
    return dict(inspect_json(home, f"platform/{platform}").get("details") or {})


def wait_connected(home: Path, platform: str) -> None:
    """Block until the platform's bot says it is connected."""
    wait(lambda: bot_details(home, platform).get("connection") == "connected", f"the {platform} bot to connect")


def user_texts(provider: ScriptedProviderProcess) -> list[str]:
    """The user messages the model was asked, in order (each request's last message, when a user's)."""
    return [r["body"]["messages"][-1]["content"] for r in provider.requests() if r["body"]["messages"][-1]["role"] == "user"]


def pairing(home: Path, *args: str) -> dict[str, Any]:
    """``hermes-actors pairing <args> --json``'s answer (the command must succeed)."""
    result = run_cli(home, "pairing", *args, "--json")
    assert result.returncode == 0, result.stderr
    return dict(json.loads(result.stdout))
