"""A real daemon with the Telegram bot, against the fake Bot API (shared by the Telegram tests)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from tests.daemon.helpers import DaemonProcess, ScriptedProviderProcess
from tests.platform.telegram_fake import TOKEN, FakeTelegram

OWNER, STRANGER, CHAT = 1001, 2002, 555


def start_bot(
    home: Path, provider: ScriptedProviderProcess, fake: FakeTelegram, *, config: dict[str, Any] | None = None,
    env: dict[str, str] | None = None, **telegram: Any,
) -> DaemonProcess:
    """Write a config with ``platforms.telegram`` (the owner allowed, short polls, ``telegram``'s
    overrides, a None one leaving its key out) and ``config``'s other sections, then start the daemon with
    the fake's token and ``env``."""
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    section = {"enabled": True, "base_url": fake.url, "allow_from": [OWNER], "poll_timeout": 1, **telegram}
    section = {key: value for key, value in section.items() if value is not None}
    (home / "config.yaml").write_text(json.dumps({
        "model": {"default": "scripted-model", "provider": "custom", "base_url": provider.base_url},
        "platforms": {"telegram": section},
        **(config or {}),
    }))
    daemon = DaemonProcess(home)
    daemon.extra_env = {"TELEGRAM_BOT_TOKEN": TOKEN, **(env or {})}
    return daemon.start()


def wait(predicate: Any, what: str, timeout: float = 30.0) -> None:
    """Poll ``predicate`` until it holds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)
