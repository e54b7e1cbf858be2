"""Toolsets: named groups of tools, composed with ``includes``.

A toolset is data.  The built-in ones (``CORE_TOOLSETS``) are immutable;
any toolset name carried by registered tools exists as well (a plugin or MCP
server needs no entry here), and a built-in toolset also picks up registered
tools tagged with its name.  Which tools a session sees is decided by
``select_tools`` from its enabled and disabled toolsets.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

import attrs

from tools.errors import ToolsetCycleError, UnknownToolsetError

if TYPE_CHECKING:
    from tools.registry import ToolRegistry

__all__ = ["CORE_TOOLSETS", "DEFAULT_TOOLSETS", "MCP_TOOLSET_PREFIX", "OPT_IN_TOOLSETS", "Toolset", "ToolsetCatalog"]


def _name_set(names: Iterable[str]) -> frozenset[str]:
    """The converter of a set of names (typed: a bare ``frozenset`` leaves the field's type unsolved)."""
    return frozenset(names)


@attrs.frozen
class Toolset:
    """A named group of tools plus the toolsets it includes."""

    name: str
    description: str
    tools: frozenset[str] = attrs.field(default=frozenset(), converter=_name_set)
    includes: tuple[str, ...] = attrs.field(default=(), converter=tuple[str, ...])


def _core() -> Mapping[str, Toolset]:
    sets = [
        Toolset("file", "Read, write, patch and search files.", {"read_file", "write_file", "patch", "search_files"}),
        Toolset("terminal", "Run shell commands and manage background processes.", {"terminal", "process"}),
        Toolset("web", "Search the web and extract pages.", {"web_search", "web_extract"}),
        Toolset(
            "browser", "Drive a real browser: open pages, read them, click, type, look at them.",
            {"browser_navigate", "browser_snapshot", "browser_click", "browser_type", "browser_scroll", "browser_back",
             "browser_press", "browser_get_images", "browser_console", "browser_vision"},
        ),
        Toolset("memory", "Persistent memory across sessions.", {"memory"}),
        Toolset("todo", "A task list for the current session.", {"todo"}),
        Toolset("clarify", "Ask the user a clarifying question.", {"clarify"}),
        Toolset("session_search", "Search past conversations.", {"session_search"}),
        Toolset("code_execution", "Run Python scripts that call tools.", {"execute_code"}),
        Toolset("delegation", "Delegate tasks to subagents.", {"delegate_task"}),
        Toolset("skills", "Load, list and write skills (procedures the agent keeps).", {"skills_list", "skill_view", "skill_manage"}),
        Toolset("cronjob", "Schedule jobs that run later or repeatedly.", {"cronjob"}),
        Toolset("messaging", "Send messages to chats on connected messaging platforms.", {"send_message"}),
        Toolset(
            "hermes-core",
            "Everything a session needs except interaction with a user.",
            includes=(
                "file", "terminal", "web", "browser", "memory", "todo", "session_search", "code_execution",
                "delegation", "skills",
            ),
        ),
        Toolset("hermes-cli", "Interactive sessions (CLI attach).", includes=("hermes-core", "clarify", "cronjob")),
        Toolset("hermes-api", "Sessions behind the HTTP API (no one to ask).", includes=("hermes-core",)),
        Toolset("hermes-cron", "Scheduled jobs (no one present).", includes=("hermes-core",)),
        Toolset("hermes-telegram", "Chats with the Telegram bot.", includes=("hermes-core", "clarify", "cronjob")),
        Toolset("hermes-discord", "Chats with the Discord bot.", includes=("hermes-core", "clarify", "cronjob")),
        Toolset("hermes-slack", "Chats with the Slack app.", includes=("hermes-core", "clarify", "cronjob")),
        Toolset("hermes-matrix", "Chats with the Matrix bot.", includes=("hermes-core", "clarify", "cronjob")),
        Toolset("hermes-mattermost", "Chats with the Mattermost bot.", includes=("hermes-core", "clarify", "cronjob")),
        Toolset("hermes-signal", "Chats with the Signal bot.", includes=("hermes-core", "clarify", "cronjob")),
        Toolset("hermes-email", "Mail threads with the email bot.", includes=("hermes-core", "clarify", "cronjob")),
        Toolset("hermes-whatsapp", "Chats with the WhatsApp bot.", includes=("hermes-core", "clarify", "cronjob")),
    ]
    return MappingProxyType({toolset.name: toolset for toolset in sets})


CORE_TOOLSETS: Mapping[str, Toolset] = _core()
DEFAULT_TOOLSETS: tuple[str, ...] = ("hermes-cli",)
#: Toolsets no platform toolset includes (as in Hermes, which offers the model no ``send_message``): a
#: session gets one only when ``tools.enabled_toolsets`` names it, a bot's session too.
OPT_IN_TOOLSETS: frozenset[str] = frozenset({"messaging"})
#: Toolsets of MCP servers (``mcp-<server>``) join every session offered a platform toolset.
MCP_TOOLSET_PREFIX = "mcp-"
PLATFORM_TOOLSET_PREFIX = "hermes-"


class ToolsetCatalog:
    """Resolves toolset names to tool names against a registry.

    Args:
        registry: registered tools; their toolset tags extend the static sets.
        toolsets: the static toolsets (defaults to ``CORE_TOOLSETS``).
    """

    def __init__(self, registry: ToolRegistry, toolsets: Mapping[str, Toolset] = CORE_TOOLSETS) -> None:
        self._registry = registry
        self._static = MappingProxyType(dict(toolsets))

    def names(self) -> list[str]:
        """Every known toolset: static ones and those carried by registered tools."""
        return sorted(set(self._static) | self._registry.toolset_names())

    def get(self, name: str) -> Toolset:
        """The toolset ``name``, with registered tools tagged with it merged in.

        Raises:
            UnknownToolsetError: no static toolset or registered tool carries the name.
        """
        static = self._static.get(name)
        registered = self._registry.tools_in_toolset(name)
        if static is None:
            if not registered:
                raise UnknownToolsetError(f"unknown toolset {name!r}; known: {', '.join(self.names())}")
            return Toolset(name, f"Tools registered under {name!r}.", registered)
        return attrs.evolve(static, tools=static.tools | registered)

    def resolve(self, name: str) -> frozenset[str]:
        """All tool names in ``name`` and, recursively, its includes.

        Raises:
            UnknownToolsetError: a name (or an include) is unknown.
            ToolsetCycleError: includes loop back on themselves.
        """
        return self._resolve(name, ())

    def _resolve(self, name: str, stack: tuple[str, ...]) -> frozenset[str]:
        if name in stack:
            raise ToolsetCycleError("toolset includes form a cycle: " + " -> ".join((*stack, name)))
        toolset = self.get(name)
        tools = set(toolset.tools)
        for included in toolset.includes:
            tools |= self._resolve(included, (*stack, name))
        return frozenset(tools)

    def select_tools(
        self, enabled: Iterable[str] | None = None, disabled: Iterable[str] = ()
    ) -> frozenset[str]:
        """The tool names a session may use.

        As in Hermes, the configured MCP servers' toolsets (``mcp-<server>``) and the loaded plugins' come
        with any platform toolset (``hermes-*``, the default ``hermes-cli`` among them); a session enabled with other
        toolsets only gets those it names. ``disabled`` removes them like any other.

        Args:
            enabled: toolsets to enable (None: ``DEFAULT_TOOLSETS``).
            disabled: toolsets whose tools are removed even if enabled elsewhere.

        Raises:
            UnknownToolsetError: a named toolset does not exist (an ``mcp-`` one never: its server
                may be connecting).
            ToolsetCycleError: includes loop back on themselves.
        """
        names = list(DEFAULT_TOOLSETS if enabled is None else enabled)
        if any(name.startswith(PLATFORM_TOOLSET_PREFIX) for name in names):
            joining = self._registry.joining_toolsets()
            names += sorted(n for n in self._registry.toolset_names() if n.startswith(MCP_TOOLSET_PREFIX) or n in joining)
        tools: set[str] = set()
        for name in names:
            tools |= self._resolve_live(name)
        for name in disabled:
            tools -= self._resolve_live(name)
        return frozenset(tools)

    def _resolve_live(self, name: str) -> frozenset[str]:
        # An MCP server that is not connected (yet) has no tools, not an unknown name: a session
        # must start whatever state a server is in.
        if name.startswith(MCP_TOOLSET_PREFIX) and name not in self._static and not self._registry.tools_in_toolset(name):
            return frozenset()
        return self.resolve(name)
