"""The daemon's tool registry, with every built-in tool registered.

Tools know nothing of actors; this is where the tool libraries and the
actor-backed tools (execute_code, delegate_task) meet, once per daemon.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import attrs
import httpx2

from actors.sandbox import register_execute_code
from actors.subagent import register_delegate_task
from config.loader import Config
from tools.browser import register_browser_tools
from tools.builtin import register_core_tools
from tools.registry import ToolRegistry
from tools.session_search import register_session_search
from tools.skills import register_skill_tools
from tools.terminal import TerminalTools, register_terminal_tools
from tools.web import WebTools, register_web_tools

__all__ = ["Toolbox", "build_toolbox"]


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
