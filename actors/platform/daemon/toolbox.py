"""The daemon's tool registry, with every built-in tool registered.

Tools know nothing of actors; this is where the tool libraries and the
actor-backed tools (execute_code, delegate_task) meet, once per daemon.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import attrs
import httpx2
import trio

from actors.sandbox import register_execute_code
from actors.subagent import register_delegate_task
from config.loader import Config
from config.plugin_providers import install_providers
from messages.control_services import PluginStatus
from tools.hooks import HookRunner, hooks_from_config, import_callable
from tools.jail.environment import terminal_environment
from tools.plugins import load_plugins
from tools.browser import register_browser_tools
from tools.plugins.context import PluginPlatform
from tools.builtin import register_core_tools
from tools.registry import ToolRegistry
from tools.session_search import register_session_search
from tools.skills import register_skill_tools
from tools.terminal import TerminalTools, register_terminal_tools
from tools.web import WebTools, register_web_tools

__all__ = ["Extensions", "Toolbox", "build_toolbox", "load_extensions"]


@attrs.define
class Toolbox:
    """The registry and the tool objects that keep per-session state."""

    registry: ToolRegistry
    terminal: TerminalTools
    web: WebTools


def build_toolbox(
    config: Config, http_client: httpx2.AsyncClient, environ: Mapping[str, str] | None = None,
    config_path: Path | None = None,
) -> Toolbox:
    """A registry with the core, terminal, web, browser, session_search, execute_code, delegate_task and skills tools.

    ``http_client`` (for the web tools) is owned and closed by the caller; ``config_path`` is the
    ``config.yaml`` an ``always`` approval is saved in.
    """
    registry = ToolRegistry()
    register_core_tools(registry, config.tools, config.memory)
    terminal = register_terminal_tools(registry, config.terminal, config.approvals, config_path)
    web = register_web_tools(registry, config.web, http_client, environ)
    register_browser_tools(registry, config.browser)
    register_session_search(registry)
    register_execute_code(registry, config.code_execution)
    register_delegate_task(registry, config.delegation)
    register_skill_tools(registry, config.skills)
    return Toolbox(registry, terminal, web)


@attrs.frozen
class Extensions:
    """The user's hooks (configured, then the plugins'), every installed plugin's status, and the messaging
    platforms the loaded ones added."""

    hooks: HookRunner
    plugins: tuple[PluginStatus, ...]
    platforms: tuple[PluginPlatform, ...] = ()


async def load_extensions(config: Config, registry: ToolRegistry) -> Extensions:
    """Load the enabled plugins into ``registry`` and the daemon's provider table, and build the hooks; a
    plugin's or a hook's fault is logged and listed, never raised.

    Command hooks get the environment the terminal's shell starts from: the daemon's own, without its
    secrets (``HERMES_ACTORS_HOME/.env`` is never in it).
    """
    plugins = await load_plugins(config.plugins, registry)
    install_providers(plugins.providers)
    environ = terminal_environment(os.environ, config.terminal.env_passthrough)
    # A ``python`` hook's module is imported here, off the loop.
    configured = await trio.to_thread.run_sync(hooks_from_config, config.hooks, environ, import_callable)
    return Extensions(HookRunner([*configured, *plugins.hooks]), plugins.statuses, plugins.platforms)
