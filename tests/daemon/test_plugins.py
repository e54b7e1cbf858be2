"""Plugins in a real daemon: installed packages (a ``.dist-info`` with ``entry_points.txt`` on the daemon's
``PYTHONPATH``, which ``importlib.metadata`` reads as it reads any installed package) whose entry points
add a tool and a hook. One that raises on import, one that clashes with a built-in tool and one that is
not enabled are listed with their state and leave the rest working; a plugin tool that crashes fails its
own call only."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.daemon.helpers import REPO, ScriptedProviderProcess, environment, run_cli
from tests.daemon.jailed import JailedDaemon, jailed_daemon

HELLO = '''\
import json

SCHEMA = {"description": "Greets someone.", "parameters": {"type": "object", "properties": {"name": {"type": "string"}},
          "required": ["name"]}}


def hello(args, **kwargs):
    return json.dumps({"greeting": "hello " + args["name"], "task": kwargs.get("task_id")})


def crash(args, **kwargs):
    raise ValueError("the plugin tool broke")


def guard(tool_name=None, args=None, **kwargs):
    if tool_name == "plugin_hello" and args.get("name") == "mallory":
        return {"action": "block", "message": "mallory is not greeted"}
    return None


def register(ctx):
    ctx.register_tool("plugin_hello", "hello_plugin", SCHEMA, hello)
    ctx.register_tool("plugin_crash", "hello_plugin", SCHEMA, crash)
    ctx.register_hook("pre_tool_call", guard)
    ctx.register_hook("subagent_stop", guard)
    ctx.register_platform(name="irc", label="IRC", adapter_factory=None, check_fn=None)
'''
BROKEN = 'raise ImportError("the plugin needs the package hx_missing_dependency")\n'
CLASH = '''\
def register(ctx):
    ctx.register_tool("plugin_extra", "clash", {"parameters": {"type": "object"}}, lambda args, **kw: "{}")
    ctx.register_tool("read_file", "clash", {"parameters": {"type": "object"}}, lambda args, **kw: "{}")
'''
IDLE = 'raise RuntimeError("never imported: not enabled")\n'


def _install(site: Path, module: str, source: str, group: str, name: str) -> None:
    """A package ``module`` with one plugin entry point, as pip would leave it installed."""
    (site / module).mkdir(parents=True)
    (site / module / "__init__.py").write_text(source)
    info = site / f"{module}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module.replace('_', '-')}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[{group}]\n{name} = {module}\n")


@pytest.fixture(scope="module")
def jailed() -> Iterator[JailedDaemon]:
    """A daemon with four plugins installed, three of them enabled."""
    with jailed_daemon(_install_plugins) as running:
        yield running


def _install_plugins(running: JailedDaemon) -> None:
    site = running.base / "site"
    _install(site, "hx_hello", HELLO, "hermes_agent.plugins", "hello")
    _install(site, "hx_broken", BROKEN, "hermes_actors.plugins", "broken")
    _install(site, "hx_clash", CLASH, "hermes_agent.plugins", "clash")
    _install(site, "hx_idle", IDLE, "hermes_agent.plugins", "idle")
    (running.home / "config.yaml").write_text(json.dumps({
        "sandbox": {"mode": "workspace-write", "max_mode": "workspace-write"},
        "plugins": {"enabled": ["hello", "broken", "clash", "idle-not-installed"]},
    }))
    running.daemon.extra_env["PYTHONPATH"] = str(site)


@pytest.fixture
def provider(provider: ScriptedProviderProcess) -> ScriptedProviderProcess:
    """The module's scripted provider, emptied of what an earlier test left."""
    provider.reset()
    return provider


class TestPluginsList:
    """``hermes-actors plugins list`` shows each installed plugin with its state and any load error."""

    def test_states(self, jailed: JailedDaemon) -> None:
        listed = run_cli(jailed.home, "plugins", "list", "--json")
        assert listed.returncode == 0, listed.stderr
        plugins = {plugin["name"]: plugin for plugin in json.loads(listed.stdout)["plugins"]}
        assert plugins["hello"]["state"] == "loaded"
        assert plugins["hello"]["tools"] == ["plugin_hello", "plugin_crash"]
        assert plugins["hello"]["hooks"] == ["pre_tool_call"]
        assert plugins["hello"]["notes"] == ["hook subagent_stop: not fired here", "platform irc: Hermes's asyncio platform adapters cannot run here"]
        assert plugins["broken"]["state"] == "failed"
        assert plugins["broken"]["group"] == "hermes_actors.plugins"
        assert "hx_missing_dependency" in plugins["broken"]["error"]
        assert plugins["clash"]["state"] == "failed"
        assert "'read_file' is already registered" in plugins["clash"]["error"]
        assert plugins["idle"]["state"] == "not enabled"
        assert "never imported" not in jailed.daemon.log()

    def test_text(self, jailed: JailedDaemon) -> None:
        listed = run_cli(jailed.home, "plugins", "list")
        assert listed.returncode == 0, listed.stderr
        assert "hello" in listed.stdout and "loaded" in listed.stdout and "hx_missing_dependency" in listed.stdout


class TestWithoutADaemon:
    """Without a daemon, ``plugins list`` reads the installed packages' metadata and imports nothing."""

    def test_lists_installed_plugins(self, jailed: JailedDaemon, tmp_path: Path) -> None:
        home = tmp_path / "home"
        home.mkdir()
        (home / "config.yaml").write_text(json.dumps({"plugins": {"enabled": ["idle"], "disabled": ["clash"]}}))
        env = environment(home, PYTHONPATH=jailed.daemon.extra_env["PYTHONPATH"])
        listed = subprocess.run(
            [sys.executable, "-m", "cli", "plugins", "list", "--json"], env=env, cwd=REPO, capture_output=True, text=True,
            timeout=30, stdin=subprocess.DEVNULL,
        )
        assert listed.returncode == 0, listed.stderr
        report = json.loads(listed.stdout)
        states = {plugin["name"]: plugin["state"] for plugin in report["plugins"]}
        assert report["daemon_running"] is False
        assert states == {"hello": "not enabled", "clash": "disabled", "idle": "enabled (not running)", "broken": "not enabled"}


class TestPluginTools:
    """A loaded plugin's tool is offered and runs; a failed plugin adds nothing; a crashing tool fails one call."""

    def test_a_plugin_tool_answers(self, jailed: JailedDaemon, provider: ScriptedProviderProcess) -> None:
        session = jailed.create_session(provider)
        result = json.loads(jailed.tool_turn(provider, session, "plugin_hello", {"name": "ada"}))
        assert result == {"greeting": "hello ada", "task": session}
        offered = {tool["function"]["name"] for tool in provider.requests()[-1]["body"]["tools"]}
        assert "plugin_hello" in offered
        # The clashing plugin failed as a whole: its other tool is not offered either.
        assert "plugin_extra" not in offered

    def test_a_crashing_plugin_tool_fails_its_call_only(self, jailed: JailedDaemon, provider: ScriptedProviderProcess) -> None:
        session = jailed.create_session(provider)
        crashed = json.loads(jailed.tool_turn(provider, session, "plugin_crash", {"name": "x"}))
        assert "the plugin tool broke" in crashed["error"]
        again = json.loads(jailed.tool_turn(provider, session, "plugin_hello", {"name": "bob"}))
        assert again["greeting"] == "hello bob"

    def test_a_plugin_hook_blocks(self, jailed: JailedDaemon, provider: ScriptedProviderProcess) -> None:
        session = jailed.create_session(provider)
        blocked = json.loads(jailed.tool_turn(provider, session, "plugin_hello", {"name": "mallory"}))
        assert blocked == {"error": "mallory is not greeted"}
