"""``hermes-actors plugins list`` and ``hermes-actors hooks list``.

Both ask the running daemon, which loaded the plugins and built the hooks when it started: each plugin's
state (loaded, failed with its error, not enabled, disabled) and what it added, each hook's event,
matcher, timeout and ``on_error``. Without a daemon, ``plugins list`` shows the installed plugins and
whether config.yaml enables them (nothing is imported), ``hooks list`` the hooks config.yaml configures.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import attrs

from control.client import ControlClient
from control.errors import DaemonNotRunning
from control.paths import DaemonPaths, home_from_env
from config.hooks import PLUGIN_ENTRY_POINT_GROUPS
from messages import control as c

__all__ = ["add_extensions_parsers", "run_extensions_command"]

def add_extensions_parsers(commands: Any, add_json: Any) -> None:
    """The ``plugins`` and ``hooks`` commands and their verbs."""
    plugins = commands.add_parser("plugins", help="installed plugins (plugins.enabled in config.yaml): list them")
    verbs = plugins.add_subparsers(dest="verb", metavar="VERB", required=True)
    add_json(verbs.add_parser("list", help="each installed plugin: its state, its tools and hooks, any load error"))
    hooks = commands.add_parser("hooks", help="the hooks on the agent's events (hooks in config.yaml, plugins'): list them")
    verbs = hooks.add_subparsers(dest="verb", metavar="VERB", required=True)
    add_json(verbs.add_parser("list", help="each hook: its event, what runs, its matcher and timeout"))


def run_extensions_command(args: argparse.Namespace) -> int:
    """Run ``plugins list`` or ``hooks list``; the exit status."""
    home = home_from_env()
    try:
        with ControlClient.connect(DaemonPaths(home)) as client:
            reply: c.ExtensionsReply | None = client.request(c.Extensions(client.next_id()))
    except DaemonNotRunning:
        reply = None
    if args.command == "plugins":
        plugins = reply.plugins if reply is not None else _installed(home)
        return _show_plugins(plugins, reply is not None, args.json)
    hooks = reply.hooks if reply is not None else _configured_hooks(home)
    return _show_hooks(hooks, reply is not None, args.json)


def _print_json(value: Any) -> None:
    from cli.commands import print_json

    print_json(value)


def _installed(home: Path) -> list[c.PluginStatus]:
    """The installed plugins, as config.yaml would have them loaded (none of them imported)."""
    import importlib.metadata  # noqa: PLC0415 - as load_config below

    from config.loader import load_config  # noqa: PLC0415 - not at the top: every command builds this module's parser, few read config.yaml

    config = load_config(home, log_warnings=False).plugins
    found = []
    for group in PLUGIN_ENTRY_POINT_GROUPS:
        for entry in importlib.metadata.entry_points(group=group):
            if entry.name in config.disabled:
                state = "disabled"
            else:
                state = "enabled (not running)" if entry.name in config.enabled else "not enabled"
            found.append(c.PluginStatus(entry.name, group, state, entry.value))
    return found


def _configured_hooks(home: Path) -> list[c.HookStatus]:
    from config.loader import load_config  # noqa: PLC0415 - not at the top: every command builds this module's parser, few read config.yaml

    hooks = load_config(home, log_warnings=False).hooks
    return [
        c.HookStatus(event, entry.label, entry.matcher, entry.timeout, entry.on_error)
        for event, entries in hooks.by_event().items()
        for entry in entries
    ]


def _show_plugins(plugins: list[c.PluginStatus], running: bool, as_json: bool) -> int:
    if as_json:
        _print_json({"daemon_running": running, "plugins": [attrs.asdict(plugin) for plugin in plugins]})
        return 0
    if not running:
        print("no daemon is running; the installed plugins:")
    if not plugins:
        print("no plugins are installed (entry points of hermes_agent.plugins or hermes_actors.plugins)")
        return 0
    width = max(len(plugin.name) for plugin in plugins)
    for plugin in plugins:
        added = ", ".join([
            *plugin.tools, *(f"hook {event}" for event in plugin.hooks), *(f"provider {name}" for name in plugin.providers),
            *(f"platform {name}" for name in plugin.platforms),
        ])
        print(f"{plugin.name:<{width}}  {plugin.state:<11}  {added}".rstrip())
        for line in ([plugin.error] if plugin.error else []) + plugin.notes:
            print(f"{'':<{width}}  {line}")
    return 0


def _show_hooks(hooks: list[c.HookStatus], running: bool, as_json: bool) -> int:
    if as_json:
        _print_json({"daemon_running": running, "hooks": [attrs.asdict(hook) for hook in hooks]})
        return 0
    if not running:
        print("no daemon is running; the hooks config.yaml configures:")
    if not hooks:
        print("no hooks are configured (hooks in config.yaml)")
        return 0
    for hook in hooks:
        matcher = f" matcher={hook.matcher}" if hook.matcher else ""
        print(f"{hook.event}: {hook.label}{matcher} (timeout {hook.timeout:g} s, on error: {hook.on_error})")
    return 0
