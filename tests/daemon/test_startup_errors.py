"""Errors a person meets when starting: each through the real CLI, with its message and exit status.

A bad config.yaml, unknown keys, an unknown provider, a missing key, a host name that
does not resolve, a refused connection, a second daemon; and the estimated cost a priced model's session
reports and stores.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.daemon.helpers import REPO, DaemonProcess, ScriptedProviderProcess, environment, run_cli

_KEY_VARIABLES = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY")


def _write_config(home: Path, text: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.yaml").write_text(text, encoding="utf-8")


def _run_without_keys(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``hermes-actors ARGS`` in an environment holding no provider key."""
    env = {k: v for k, v in os.environ.items() if k not in _KEY_VARIABLES}
    env.update(HERMES_ACTORS_HOME=str(home), PYTHONUNBUFFERED="1")
    return subprocess.run(
        [sys.executable, "-m", "cli", *args], env=env, cwd=REPO, stdin=subprocess.DEVNULL,
        capture_output=True, text=True, timeout=60,
    )


def _config_check(home: Path, text: str, *, keys: bool = True) -> subprocess.CompletedProcess[str]:
    """``config check`` on a home whose config.yaml holds ``text`` (without ``keys``: no provider key set)."""
    _write_config(home, text)
    return run_cli(home, "config", "check") if keys else _run_without_keys(home, "config", "check")


@pytest.fixture
def stopped(home: Path) -> Iterator[Path]:
    """A home whose daemon (if a test started one) is stopped afterwards."""
    try:
        yield home
    finally:
        if (home / "run").exists():
            run_cli(home, "stop")


class TestBadConfigThroughChat:
    """chat on a home with a bad config.yaml prints the error itself and exits 2, starting no daemon."""

    def test_yaml_error_has_real_lines_and_position(self, stopped: Path) -> None:
        _write_config(stopped, "model:\n  default: gpt-4.1\n   provider: openai\n")
        result = run_cli(stopped, "chat", "-q", "hi")
        assert result.returncode == 2, result.stderr
        assert "config.yaml, line 3, column 12: not valid YAML: mapping values are not allowed here" in result.stderr
        assert "\n     provider: openai\n" in result.stderr  # the line itself, then a caret under the column
        assert "\\n" not in result.stderr
        assert "daemon.log" not in result.stderr
        assert not (stopped / "logs" / "daemon.log").exists()  # refused before a daemon was started

    def test_bad_value_names_the_key(self, stopped: Path) -> None:
        _write_config(stopped, "model:\n  default: 3\n")
        result = run_cli(stopped, "chat", "-q", "hi")
        assert result.returncode == 2
        assert "expected a string, got an integer @ model.default" in result.stderr


class TestBadConfigWithADaemonRunning:
    """A daemon already running on an earlier, valid file keeps serving chat; the new file's error is a warning."""

    def test_chat_still_works(self, daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        _write_config(daemon.home, "model: [\n")
        provider.push({"text": "still here"})
        result = run_cli(daemon.home, "chat", "-q", "hi", *provider.chat_flags())
        assert result.returncode == 0, result.stderr
        assert "still here" in result.stdout
        assert "warning: a daemon started now would refuse the configuration:" in result.stderr
        assert "not valid YAML" in result.stderr


    def test_a_file_changed_after_a_clean_check_is_checked_again(
        self, daemon: DaemonProcess, provider: ScriptedProviderProcess
    ) -> None:
        """The clean file's check is remembered; an edit (another size or mtime) is read and warned about."""
        _write_config(daemon.home, "display: {}\n")
        provider.push({"text": "one"}, {"text": "two"})
        first = run_cli(daemon.home, "chat", "-q", "hi", *provider.chat_flags())
        assert first.returncode == 0 and "warning" not in first.stderr, first.stderr
        _write_config(daemon.home, "display: {}\ntypo_section: {}\n")
        second = run_cli(daemon.home, "chat", "-q", "hi", *provider.chat_flags())
        assert second.returncode == 0, second.stderr
        assert "unknown key typo_section (ignored)" in second.stderr


class TestUnknownKeysOnTheTerminal:
    """Unknown config keys are warned about on stderr by chat, status and config check."""

    def test_config_check(self, home: Path) -> None:
        _write_config(home, "modle:\n  default: gpt-4.1\nmodel:\n  default: gpt-4.1\n  provder: openai\n")
        result = run_cli(home, "config", "check")
        assert result.returncode == 0
        assert "unknown key modle (ignored)" in result.stderr
        assert "unknown key model.provder (ignored)" in result.stderr
        assert result.stdout.strip().endswith(": ok")
        document = json.loads(run_cli(home, "config", "check", "--json").stdout)
        assert document["ok"] is True
        assert document["warnings"] == [
            "unknown key modle (ignored): did you mean model?",
            "unknown key model.provder (ignored): did you mean model.provider?",
        ]

    def test_a_typo_gets_did_you_mean(self, home: Path) -> None:
        result = _config_check(home, "model:\n  defualt: gpt-4.1\n  unrelated_thing: 1\n")
        assert result.returncode == 0
        assert "unknown key model.defualt (ignored): did you mean model.default?" in result.stderr
        assert "unknown key model.unrelated_thing (ignored)\n" in result.stderr

    def test_config_check_refuses_a_bad_file(self, home: Path) -> None:
        result = _config_check(home, "retry:\n  max_retries: many\n")
        assert result.returncode == 2
        assert "retry.max_retries" in result.stderr

    def test_status_warns_without_a_daemon(self, home: Path) -> None:
        _write_config(home, "dispaly: {}\n")
        result = run_cli(home, "status")
        assert "warning" in result.stderr and "unknown key dispaly (ignored)" in result.stderr

    def test_chat_warns(self, stopped: Path, provider: ScriptedProviderProcess) -> None:
        _write_config(stopped, "agnet: {}\n")
        provider.push({"text": "fine"})
        result = run_cli(stopped, "chat", "-q", "hi", *provider.chat_flags())
        assert result.returncode == 0, result.stderr
        assert result.stderr.count("unknown key agnet (ignored)") == 1


class TestProviderFlag:
    """--provider takes only a known provider; anything else is refused with the list, exit 2."""

    def test_bogus_provider(self, home: Path) -> None:
        result = run_cli(home, "chat", "-q", "hi", "--provider", "bogus")
        assert result.returncode == 2
        assert "unknown provider 'bogus'; known providers: openai, anthropic, openrouter, custom" in result.stderr
        assert not (home / "run").exists()


class TestTypoedProvider:
    """A provider name that is not one is refused by config check and chat (exit 2), with the closest name."""

    def test_config_check(self, home: Path) -> None:
        result = _config_check(home, "model:\n  provider: custm\n  base_url: http://127.0.0.1:9/v1\n")
        assert result.returncode == 2, result.stderr
        assert "model.provider 'custm' is not a provider here (did you mean 'custom'?)" in result.stderr
        assert not result.stdout.strip().endswith(": ok")

    def test_in_a_fallback_entry(self, home: Path) -> None:
        result = _config_check(home, "fallback_providers:\n  - {provider: opnrouter, model: m}\n")
        assert result.returncode == 2, result.stderr
        assert "fallback_providers[0].provider 'opnrouter' is not a provider here (did you mean 'openrouter'?)" in (
            result.stderr
        )

    def test_chat_refuses_before_starting_a_daemon(self, stopped: Path) -> None:
        _write_config(stopped, "model:\n  provider: custm\n")
        result = run_cli(stopped, "chat", "-q", "hi")
        assert result.returncode == 2, result.stderr
        assert "'custm' is not a provider here" in result.stderr
        assert not (stopped / "run").exists()


class TestMissingKey:
    """A known provider without its key is refused at session creation, naming the variable."""

    def test_no_config_names_the_default_models_provider(self, home: Path) -> None:
        home.mkdir(parents=True, exist_ok=True)
        result = _run_without_keys(home, "config", "check")
        assert result.returncode == 0, result.stderr
        # The default model is an OpenRouter id: its key is OpenRouter's, not OpenAI's.
        assert "set OPENROUTER_API_KEY (in the environment or HERMES_ACTORS_HOME/.env)" in result.stderr
        assert "OPENAI_API_KEY" not in result.stderr

    def test_openrouter_without_a_key(self, stopped: Path) -> None:
        result = _run_without_keys(stopped, "chat", "-q", "hi", "--provider", "openrouter", "--model", "openai/gpt-4.1")
        assert result.returncode == 2, result.stderr
        assert "set OPENROUTER_API_KEY (in the environment or HERMES_ACTORS_HOME/.env)" in result.stderr
        assert "401" not in result.stderr and "no-key-required" not in result.stderr

    def test_config_check_names_it_too(self, home: Path) -> None:
        result = _config_check(home, "model:\n  default: claude-sonnet-4\n  provider: anthropic\n", keys=False)
        assert result.returncode == 0
        assert "set ANTHROPIC_API_KEY (in the environment or HERMES_ACTORS_HOME/.env)" in result.stderr

    def test_a_key_in_dot_env_is_enough(self, stopped: Path) -> None:
        stopped.mkdir(parents=True)
        (stopped / ".env").write_text("ANTHROPIC_API_KEY=sk-test\n")
        result = _config_check(stopped, "model:\n  default: claude-sonnet-4\n  provider: anthropic\n", keys=False)
        assert "ANTHROPIC_API_KEY" not in result.stderr


class TestUnresolvableHost:
    """A base URL whose host does not resolve is a connection error naming the host, with its short budget."""

    def test_cannot_resolve(self, stopped: Path) -> None:
        _write_config(stopped, "retry:\n  connection_retries: 1\n  connection_delay: 0.1\n")
        started = time.monotonic()
        result = run_cli(
            stopped, "chat", "-q", "hi", "--provider", "custom", "--base-url", "http://nonexistent.invalid/v1",
            "--model", "m", timeout=60,
        )
        elapsed = time.monotonic() - started
        assert result.returncode == 1
        assert "cannot resolve nonexistent.invalid" in result.stdout + result.stderr
        assert "timeout" not in result.stdout + result.stderr
        assert (result.stdout + result.stderr).count("retrying in 0.1 s") == 1
        assert elapsed < 15, elapsed  # the timeout budget took 40 s


class TestRefusedConnection:
    """A refused connection is said as such, once, after the short connection budget (not a timeout)."""

    def test_nothing_listening(self, stopped: Path) -> None:
        with socket.socket() as probe:  # a port nothing listens on: bound, then released
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        _write_config(stopped, "retry:\n  connection_retries: 1\n  connection_delay: 0.1\n")
        started = time.monotonic()
        result = run_cli(
            stopped, "chat", "-q", "hi", "--provider", "custom", "--base-url", f"http://127.0.0.1:{port}/v1",
            "--model", "m", timeout=60,
        )
        elapsed = time.monotonic() - started
        both = result.stdout + result.stderr
        assert result.returncode == 1, both
        assert f"connection refused by 127.0.0.1:{port} (is the server running?)" in result.stderr
        assert "timeout" not in both
        assert both.count("connection refused by") == 1, both  # was printed three times
        assert result.stdout == ""  # the error is not an answer
        assert elapsed < 15, elapsed  # the timeout backoff took 47 s


class TestSecondDaemon:
    """A second daemon for a home is refused at once (exit 3), without loading the whole tree first."""

    def test_refused_quickly(self, daemon: DaemonProcess) -> None:
        # What was imported, not how long it took: a wall-clock bound failed on a loaded machine.
        result = subprocess.run(
            [sys.executable, "-m", "cli", "daemon"],
            env={**environment(daemon.home), "PYTHONPROFILEIMPORTTIME": "1"},
            cwd=REPO, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30,
        )  # fmt: skip
        assert result.returncode == 3
        assert "a daemon is already running" in result.stderr
        imported = {line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines() if line.startswith("import time:")}
        assert "actors.platform.daemon.process" in imported  # the import log is being read
        heavy = {"openai", "anthropic", "httpx2", "providers", "actors.session", "actors.platform.daemon.wiring"}
        assert not heavy & imported, heavy & imported


class TestCost:
    """A priced model's session reports and stores its estimated cost; an unknown model's is None."""

    def _events(self, result: subprocess.CompletedProcess[str]) -> list[dict[str, object]]:
        return [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]

    def test_priced_model(self, stopped: Path, provider: ScriptedProviderProcess) -> None:
        usage = {"prompt_tokens": 1000, "completion_tokens": 500, "cache_read_tokens": 200}
        provider.push({"text": "one", "usage": usage})
        flags = ["--model", "gpt-4.1", "--provider", "custom", "--base-url", provider.base_url]
        result = run_cli(stopped, "chat", "-q", "hi", "--json", *flags)
        assert result.returncode == 0, result.stderr
        [update] = [e for e in self._events(result) if e["type"] == "UsageUpdated"]
        # gpt-4.1: 800 fresh input at $2/M, 200 cached at $0.50/M, 500 output at $8/M.
        assert update["cost_usd"] == pytest.approx(0.0057)
        assert update["context_tokens"] == 1000
        assert update["context_window"] == 1_047_576
        session_id = update["session_id"]
        listed = json.loads(run_cli(stopped, "sessions", "list", "--json").stdout)["sessions"]
        assert [s["cost"] for s in listed if s["id"] == session_id] == [pytest.approx(0.0057)]

    def test_pricing_override_and_unknown_model(self, stopped: Path, provider: ScriptedProviderProcess) -> None:
        _write_config(stopped, "pricing:\n  my-finetune: {input: 10, output: 20}\n")
        usage = {"prompt_tokens": 100_000, "completion_tokens": 50_000}
        provider.push({"text": "a", "usage": usage}, {"text": "b", "usage": usage})
        base = ["--provider", "custom", "--base-url", provider.base_url]
        priced = run_cli(stopped, "chat", "-q", "hi", "--json", "--model", "my-finetune", *base)
        [update] = [e for e in self._events(priced) if e["type"] == "UsageUpdated"]
        assert update["cost_usd"] == pytest.approx(2.0)
        unknown = run_cli(stopped, "chat", "-q", "hi", "--json", "--model", "scripted-model", *base)
        [update] = [e for e in self._events(unknown) if e["type"] == "UsageUpdated"]
        assert update["cost_usd"] is None
