"""Key rotation in the running daemon: a provider's several keys form one pool every session shares."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.daemon.helpers import DaemonProcess, ScriptedProviderProcess
from tests.daemon.test_sessions import _chat

#: The pool: the provider's usual variable, then a variable named only in credential_pool.extra_keys
#: (not ending in _API_KEY, so only the configuration can make the daemon read it).
CONFIG = "credential_pool:\n  extra_keys:\n    custom: [OPENAI_API_KEY_2]\n"
KEYS = {"OPENAI_API_KEY": "sk-key-one", "OPENAI_API_KEY_2": "sk-key-two"}


def _start(home: Path) -> DaemonProcess:
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    (home / "config.yaml").write_text(CONFIG)
    daemon = DaemonProcess(home)
    daemon.extra_env = dict(KEYS)
    return daemon.start()


def _keys_used(provider: ScriptedProviderProcess) -> list[str]:
    return [r["headers"].get("authorization", "") for r in provider.requests() if r["path"].endswith("/chat/completions")]


class TestKeyRotation:
    """A key that hits a limit gives way to the next key of the same provider, daemon-wide."""

    @pytest.mark.parametrize("status", [429, 401])
    def test_limited_key_rotates(self, home: Path, provider: ScriptedProviderProcess, status: int) -> None:
        """Key 1 answers with the error, the turn succeeds with key 2, and the next session starts on key 2."""
        provider.reset()
        before = len(_keys_used(provider))
        daemon = _start(home)
        try:
            provider.push({"error": {"status": status}}, {"text": "answered with key two"})
            _, first = _chat(daemon, provider, "hello")
            assert "answered with key two" in first.stdout, (first.stdout, first.stderr)
            provider.push({"text": "still key two"})
            _, second = _chat(daemon, provider, "hello again")
            assert "still key two" in second.stdout, (second.stdout, second.stderr)
        finally:
            daemon.stop()
        assert _keys_used(provider)[before:] == ["Bearer sk-key-one", "Bearer sk-key-two", "Bearer sk-key-two"]
