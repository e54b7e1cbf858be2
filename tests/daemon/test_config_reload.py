"""A running daemon reads config.yaml and .env again for each new session; status says what still lags.

Through the real CLI against a real daemon and the scripted provider: the model and key a new session
uses follow the edited files without a restart; a file that no longer loads, and an edit to a section
that applies only at start, are named by ``status``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.daemon.helpers import DaemonProcess, ScriptedProviderProcess, run_cli


def _model_config(provider: ScriptedProviderProcess, model: str, extra: str = "") -> str:
    return (
        f"model:\n  default: {model}\n  provider: custom\n  base_url: {provider.base_url}\n"
        f"  api_key_env: RELOAD_TEST_KEY\n{extra}"
    )


def _write(path: Path, text: str) -> None:
    """Write ``text``, and move the stamp on: two writes within one clock tick must still differ."""
    before = path.stat().st_mtime_ns if path.exists() else 0
    path.write_text(text, encoding="utf-8")
    if path.stat().st_mtime_ns <= before:
        os.utime(path, ns=(before + 1_000_000, before + 1_000_000))


@pytest.fixture
def running(home: Path, provider: ScriptedProviderProcess) -> Iterator[DaemonProcess]:
    """A daemon started on a config.yaml naming ``first-model`` at the scripted provider, with ``.env``'s key."""
    home.mkdir(parents=True)
    _write(home / "config.yaml", _model_config(provider, "first-model"))
    _write(home / ".env", "RELOAD_TEST_KEY=sk-first\n")
    daemon = DaemonProcess(home).start()
    try:
        yield daemon
    finally:
        daemon.stop()


def _last_request(provider: ScriptedProviderProcess) -> tuple[str, str]:
    """The model and Authorization header of the provider's last chat request."""
    request = [r for r in provider.requests() if r["path"].endswith("/chat/completions")][-1]
    headers = {k.lower(): v for k, v in request["headers"].items()}
    return request["body"]["model"], headers.get("authorization", "")


class TestNewSessionsReadTheFiles:
    """A new session uses config.yaml and .env as they are now; no stop needed."""

    def test_model_and_key_follow_the_edit(self, running: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        provider.reset()
        provider.push({"text": "one"})
        first = run_cli(running.home, "chat", "-q", "hi")
        assert first.returncode == 0, first.stderr
        assert _last_request(provider) == ("first-model", "Bearer sk-first")

        _write(running.home / "config.yaml", _model_config(provider, "second-model"))
        _write(running.home / ".env", "RELOAD_TEST_KEY=sk-second\n")
        provider.push({"text": "two"})
        second = run_cli(running.home, "chat", "-q", "hi")
        assert second.returncode == 0, second.stderr
        assert _last_request(provider) == ("second-model", "Bearer sk-second")
        status = run_cli(running.home, "status")
        assert "config.yaml" not in status.stdout, status.stdout  # nothing lags


class TestStatusSaysWhatLags:
    """status names a file the daemon cannot use, and edits that wait for a restart."""

    def test_a_file_that_no_longer_loads(self, running: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        _write(running.home / "config.yaml", _model_config(provider, "m", "agent:\n  api_max_retries: many\n"))
        status = run_cli(running.home, "status")
        assert status.returncode == 0, status.stderr
        assert "config.yaml was edited but cannot be used; new sessions keep the configuration read at" in status.stdout
        assert "agent.api_max_retries" in status.stdout

    def test_a_start_only_section(self, running: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        _write(running.home / "config.yaml", _model_config(provider, "first-model", "daemon:\n  hibernate_after_seconds: 77\n"))
        status = run_cli(running.home, "status")
        assert (
            "config.yaml: daemon changed since the daemon started and apply only after `hermes-actors stop` "
            "(new sessions already use the rest)"
        ) in status.stdout, status.stdout
        document = run_cli(running.home, "status", "--json").stdout
        assert '"restart_needed": ["daemon"]' in document
