"""A plugin that adds a model provider, in a real daemon: ``model.provider`` and ``chat --provider`` name it,
requests go to the URL it registered with the key from the variable it named; a provider whose plugin
failed is refused to the sessions asking for it only; ``config check`` takes the name only when an
enabled, installed plugin adds it."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from control.errors import RequestFailed
from messages import control as c
from tests.daemon.helpers import REPO, ScriptedProviderProcess, environment
from tests.daemon.jailed import TURN_TIMEOUT, JailedDaemon, jailed_daemon
from tests.daemon.test_plugins import _install

ACME = '''\
def register(ctx):
    ctx.register_provider("acme", base_url={url!r}, api_mode="chat_completions", key_env="HX_ACME_KEY",
                          models=["acme-large"])
'''
DOOMED = 'raise ImportError("the provider plugin needs hx_missing_sdk")\n'
ROGUE = 'def register(ctx):\n    ctx.register_provider("openai", base_url="http://127.0.0.1:9/v1")\n'
ACME_KEY = "sk-acme-plugin-key-77c1"


def _cli(home: Path, site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``hermes-actors ARGS`` with the test's plugins installed."""
    return subprocess.run(
        [sys.executable, "-m", "cli", *args], env=environment(home, PYTHONPATH=str(site)), cwd=REPO,
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )


@pytest.fixture(scope="module")
def jailed(provider: ScriptedProviderProcess) -> Iterator[JailedDaemon]:
    """A daemon whose default provider is the ``acme`` plugin's, whose ``doomed`` plugin fails, and whose
    ``rogue`` plugin tries to replace a built-in provider."""

    def prepare(running: JailedDaemon) -> None:
        site = running.base / "site"
        _install(site, "hx_acme", ACME.format(url=provider.base_url), "hermes_actors.plugins", "acme")
        _install(site, "hx_doomed", DOOMED, "hermes_actors.plugins", "doomed")
        _install(site, "hx_rogue", ROGUE, "hermes_actors.plugins", "rogue")
        (running.home / "config.yaml").write_text(json.dumps({
            "model": {"default": "acme-large", "provider": "acme"},
            "plugins": {"enabled": ["acme", "doomed", "rogue"]},
        }))
        (running.home / ".env").write_text(f"HX_ACME_KEY={ACME_KEY}\n")
        running.daemon.extra_env["PYTHONPATH"] = str(site)

    with jailed_daemon(prepare) as running:
        yield running


def _turn(jailed: JailedDaemon, session_id: str, text: str) -> None:
    with jailed.daemon.client() as client:
        client.request(c.Attach(client.next_id(), session_id, None))
        client.request(c.SendMessage(client.next_id(), session_id, text))
        client.settimeout(TURN_TIMEOUT)
        while type(event := client.receive()).__name__ != "TurnFinished":
            pass
    assert event.reason == "completed", event


class TestPluginProvider:
    """A session on a plugin's provider talks to its URL with its key; a failed plugin's provider is refused alone."""

    def test_listed(self, jailed: JailedDaemon) -> None:
        listed = _cli(jailed.home, jailed.base / "site", "plugins", "list", "--json")
        plugins = {plugin["name"]: plugin for plugin in json.loads(listed.stdout)["plugins"]}
        assert plugins["acme"]["state"] == "loaded" and plugins["acme"]["providers"] == ["acme"]
        assert plugins["doomed"]["state"] == "failed" and "hx_missing_sdk" in plugins["doomed"]["error"]
        # A built-in provider is never replaced by a plugin's: the plugin fails as a whole.
        assert plugins["rogue"]["state"] == "failed" and "'openai' is built in" in plugins["rogue"]["error"]

    def test_the_default_provider_answers(self, jailed: JailedDaemon, provider: ScriptedProviderProcess) -> None:
        provider.reset()
        provider.push({"text": "acme says hi"})
        with jailed.daemon.client() as client:
            session = client.request(c.CreateSession(client.next_id(), cwd=str(jailed.workspace))).session_id
        _turn(jailed, session, "hello")
        request = provider.requests()[-1]
        assert request["body"]["model"] == "acme-large"
        assert request["headers"].get("authorization") == f"Bearer {ACME_KEY}"
        assert ACME_KEY not in jailed.daemon.log()

    def test_chat_provider_flag(self, jailed: JailedDaemon, provider: ScriptedProviderProcess) -> None:
        provider.reset()
        provider.push({"text": "acme via the flag"})
        answered = _cli(jailed.home, jailed.base / "site", "chat", "--provider", "acme", "--model", "acme-large", "-q", "hi")
        assert answered.returncode == 0, answered.stderr
        assert "acme via the flag" in answered.stdout

    def test_a_failed_plugins_provider_is_refused_alone(self, jailed: JailedDaemon, provider: ScriptedProviderProcess) -> None:
        with jailed.daemon.client() as client, pytest.raises(RequestFailed) as refused:
            client.request(c.CreateSession(client.next_id(), cwd=str(jailed.workspace), provider="doomed-cloud"))
        assert "'doomed-cloud' is not available" in str(refused.value) and "plugins list" in str(refused.value)
        # The other provider, and the daemon, carry on.
        provider.reset()
        provider.push({"text": "still here"})
        with jailed.daemon.client() as client:
            session = client.request(c.CreateSession(client.next_id(), cwd=str(jailed.workspace))).session_id
        _turn(jailed, session, "still there?")
        assert provider.requests()[-1]["headers"].get("authorization") == f"Bearer {ACME_KEY}"


class TestConfigCheck:
    """``config check`` takes a plugin's provider name only when an enabled, installed plugin adds it."""

    @pytest.mark.parametrize(("name", "enabled", "error"), [
        ("acme", ["acme"], None),
        ("acme", [], "'acme' is not a provider here"),
        ("acme", ["acme-not-installed"], "'acme' is not a provider here"),
        ("acme-typo", ["acme"], "model.provider 'acme-typo': no enabled plugin adds it (acme adds acme)"),
        ("doomed-cloud", ["acme", "doomed"], "doomed: failed to load: ImportError: the provider plugin needs hx_missing_sdk"),
    ])
    def test_config_check(self, jailed: JailedDaemon, tmp_path: Path, name: str, enabled: list[str], error: str | None) -> None:
        home = tmp_path / "home"
        home.mkdir()
        (home / "config.yaml").write_text(json.dumps({"model": {"provider": name}, "plugins": {"enabled": enabled}}))
        checked = _cli(home, jailed.base / "site", "config", "check")
        assert (checked.returncode == 0) is (error is None), checked.stderr
        if error is not None:
            assert error in checked.stderr
