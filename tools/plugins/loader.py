"""Finding and loading plugins: installed Python packages that add tools, hooks, model providers and
messaging platforms through entry points.

A plugin is an entry point of Hermes's group ``hermes_agent.plugins`` (so a Hermes plugin installs as it
is) or of ours, ``hermes_actors.plugins``; it names a module with a ``register(ctx)`` function, or the
function itself. As in Hermes, an installed plugin loads only when ``plugins.enabled`` names it, and never
when ``plugins.disabled`` does.

Each plugin is isolated: its import and its ``register`` run on a thread, bounded by
:data:`PLUGIN_LOAD_SECONDS`; whatever it raises (or a ``register`` that never returns, or a tool it adds
provider or platform that clashes with a built-in one or another plugin's) makes that plugin ``failed``, logged and listed with the reason, and
adds nothing of it. The other plugins and the daemon carry on. A plugin's tool that crashes when called
fails that call only (``tools.dispatch``); a provider whose plugin failed is refused to the sessions that
ask for it, and to them only (``providers.recovery.keys``).
"""

from __future__ import annotations

import importlib.metadata
import logging
import traceback
from collections.abc import Callable
from types import ModuleType
from typing import Any

import attrs
import trio

from config.hooks import PLUGIN_ENTRY_POINT_GROUPS, PluginsConfig
from config.plugin_providers import PluginProvider, provider_clash
from messages.control_services import PluginStatus
from messages.untrusted import repair_text
from tools.errors import RegistrationError
from tools.hooks import Hook
from config.api import PlatformsConfig
from tools.plugins.context import PluginContext, PluginPlatform
from tools.redact import redact_secrets
from tools.registry import ToolRegistry

__all__ = ["PLUGIN_LOAD_SECONDS", "LoadedPlugins", "discover", "load_plugins", "run_register"]

log = logging.getLogger("hermes_actors.plugins")

#: How long one plugin's import and ``register`` may take before it is given up as failed.
PLUGIN_LOAD_SECONDS = 30.0


@attrs.frozen
class LoadedPlugins:
    """What loading found: every installed plugin's status, and the hooks, providers and platforms the
    loaded ones added."""

    statuses: tuple[PluginStatus, ...] = ()
    hooks: tuple[Hook, ...] = ()
    providers: tuple[PluginProvider, ...] = ()
    platforms: tuple[PluginPlatform, ...] = ()


def discover() -> list[importlib.metadata.EntryPoint]:
    """The installed plugins' entry points, group by group (reads the installed packages' metadata)."""
    found: list[importlib.metadata.EntryPoint] = []
    for group in PLUGIN_ENTRY_POINT_GROUPS:
        found.extend(importlib.metadata.entry_points(group=group))
    return found


async def load_plugins(config: PluginsConfig, registry: ToolRegistry, timeout: float = PLUGIN_LOAD_SECONDS) -> LoadedPlugins:
    """Load the enabled plugins into ``registry``; the status of each installed one and their hooks.

    Never raises for a plugin's fault (only cancellation leaves).
    """
    try:
        found = await trio.to_thread.run_sync(discover)
    except Exception as exc:  # a broken metadata file of some installed package
        log.error("cannot list the installed plugins: %s", exc)
        return LoadedPlugins()
    statuses: list[PluginStatus] = []
    hooks: list[Hook] = []
    providers: dict[str, PluginProvider] = {}
    platforms: dict[str, PluginPlatform] = {}
    for entry in found:
        status = PluginStatus(entry.name, entry.group, "not enabled", entry.value)
        if entry.name in config.disabled:
            status = attrs.evolve(status, state="disabled")
        elif entry.name in config.enabled:
            status, ctx = await _load_one(entry, status, registry, (providers, platforms), timeout)
            if ctx is not None:
                hooks.extend(ctx.hooks)
                providers.update((provider.name, provider) for provider in ctx.providers)
                platforms.update((platform.name, platform) for platform in ctx.platforms)
        statuses.append(status)
    for name in sorted(set(config.enabled) - {entry.name for entry in found}):
        log.warning("plugins.enabled names %s, which no installed package provides", name)
    return LoadedPlugins(tuple(statuses), tuple(hooks), tuple(providers.values()), tuple(platforms.values()))


async def _load_one(
    entry: importlib.metadata.EntryPoint, status: PluginStatus, registry: ToolRegistry,
    taken: tuple[dict[str, PluginProvider], dict[str, PluginPlatform]], timeout: float,
) -> tuple[PluginStatus, PluginContext | None]:
    """Load one plugin; its status, and what it registered when it loaded (None: it failed)."""
    ctx = PluginContext(entry.name)
    error: str | None = None
    with trio.move_on_after(timeout) as scope:
        # Abandoned when it overruns: a thread cannot be stopped, and what it registers later is never applied.
        error = await trio.to_thread.run_sync(run_register, entry, ctx, abandon_on_cancel=True)
    if scope.cancelled_caught:
        error = f"its import and register() did not finish within {timeout:g} s"
    if error is None:
        error = _provider_clash(ctx, taken[0]) or _platform_clash(ctx, taken[1])
    if error is None:
        error = _apply_tools(ctx, registry)
    if error is not None:
        log.error("plugin %s (%s) failed to load: %s", entry.name, entry.value, error)
        return attrs.evolve(status, state="failed", error=error, notes=list(ctx.notes)), None
    for note in ctx.notes:
        log.warning("plugin %s: %s", entry.name, note)
    log.info(
        "plugin %s loaded: %d tool(s), %d hook(s), %d provider(s), %d platform(s)", entry.name, len(ctx.tools),
        len(ctx.hooks), len(ctx.providers), len(ctx.platforms),
    )
    return attrs.evolve(
        status, state="loaded", tools=[tool.name for tool in ctx.tools], hooks=[hook.event for hook in ctx.hooks],
        providers=[provider.name for provider in ctx.providers], platforms=[platform.name for platform in ctx.platforms],
        notes=list(ctx.notes),
    ), ctx


def _provider_clash(ctx: PluginContext, taken: dict[str, PluginProvider]) -> str | None:
    """Why the plugin's providers cannot be added (a built-in name, another plugin's, or twice), or None."""
    own: dict[str, PluginProvider] = {}
    for provider in ctx.providers:
        clash = provider_clash(provider.name, {**taken, **own})
        if clash is not None:
            return clash
        own[provider.name] = provider
    return None


def run_register(entry: importlib.metadata.EntryPoint, ctx: PluginContext) -> str | None:
    """Import the plugin and run its ``register(ctx)`` (on a thread); why it failed, or None."""
    try:
        target: Any = entry.load()
        register: Callable[[PluginContext], Any] | None = (
            getattr(target, "register", None) if isinstance(target, ModuleType) else target
        )
        if not callable(register):
            return "it has no register(ctx) function"
        register(ctx)
    except (Exception, SystemExit) as exc:
        trace = repair_text(redact_secrets("".join(traceback.format_exception(exc))))
        log.error("plugin %s raised while loading:\n%s", entry.name, trace)
        return repair_text(redact_secrets(f"{type(exc).__name__}: {exc}"))
    return None


def _platform_clash(ctx: PluginContext, taken: dict[str, PluginPlatform]) -> str | None:
    """Why the plugin's platforms cannot be added (a built-in one's name, another plugin's, or twice), or None."""
    built_in = set(attrs.fields_dict(PlatformsConfig)) - {"plugin_platforms"}
    seen = set(taken)
    for platform in ctx.platforms:
        if platform.name in built_in:
            return f"platform {platform.name!r} is built in; a plugin cannot replace it"
        if platform.name in seen:
            return f"platform {platform.name!r} is already registered"
        seen.add(platform.name)
    return None


def _apply_tools(ctx: PluginContext, registry: ToolRegistry) -> str | None:
    """Register the plugin's tools, all or none; why not, or None."""
    added: list[str] = []
    for tool in ctx.tools:
        try:
            if tool.name in registry:
                # Never a silent replacement of a built-in tool (or another plugin's), whatever its toolset.
                raise RegistrationError(f"tool {tool.name!r} is already registered; a plugin cannot replace it")
            registry.register(tool.name, tool.toolset, tool.schema, tool.handler, emoji=tool.emoji)
        except RegistrationError as exc:
            for name in added:
                registry.deregister(name)
            return str(exc)
        added.append(tool.name)
    for toolset in {tool.toolset for tool in ctx.tools}:
        registry.join_platform_toolsets(toolset)
    return None
