"""What a plugin's ``register(ctx)`` is given: Hermes's ``PluginContext`` calls, recorded.

``register_tool``, ``register_hook`` and ours, ``register_provider`` (a model endpoint, see
``config.plugin_providers``) and ``register_platform`` (a messaging platform whose factory builds a Trio
adapter, see ``actors.platform.plugins``), are taken; what a plugin registers is kept here and applied to the
daemon only once its ``register`` has returned, so a plugin that raises half-way, or hangs, adds nothing.
Hermes's other registrations (its ``register_platform`` of an asyncio adapter, providers of images, speech, search, CLI and slash commands ...)
are noted on the plugin's record as not taken here, and the rest of the plugin still loads.

A plugin's tool handler is Hermes's: ``handler(args, **kwargs)`` returning a JSON string or a dict,
blocking (run on a thread) or a coroutine function. A result whose JSON object has ``error`` is a failed
call; one that is not JSON is given to the model as ``{"result": text}``.
"""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs
import trio

from config.hooks import HOOK_EVENTS
from config.plugin_providers import PluginProvider
from tools.errors import ToolError
from tools.hooks import Hook
from tools.results import ToolResult

if TYPE_CHECKING:
    from tools.context import ToolContext
    from tools.registry import Handler

__all__ = ["PluginContext", "PluginPlatform", "PluginTool", "tool_handler"]


@attrs.frozen
class PluginTool:
    """A tool a plugin registered, as it gave it."""

    name: str
    toolset: str
    schema: Mapping[str, Any]
    handler: Handler
    emoji: str = "🔌"


@attrs.frozen
class PluginPlatform:
    """A messaging platform a plugin registered: ``factory(setup)`` builds its adapter actor (a
    ``PlatformAdapter`` subclass) from an ``actors.platform.plugins.PlatformSetup``."""

    name: str
    plugin: str
    factory: Callable[[Any], Any]


class PluginContext:
    """The ``ctx`` a plugin's ``register`` gets; records what it registers.

    Args:
        name: the plugin's name (its entry point's).
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.tools: list[PluginTool] = []
        self.hooks: list[Hook] = []
        self.providers: list[PluginProvider] = []
        self.platforms: list[PluginPlatform] = []
        #: What it asked for that is not taken here, in words.
        self.notes: list[str] = []

    @property
    def profile_name(self) -> str:
        """Hermes's profile name; this daemon has one home, Hermes's ``default``."""
        return "default"

    def register_tool(
        self, name: str, toolset: str, schema: Mapping[str, Any], handler: Callable[..., Any],
        check_fn: Callable[[], bool] | None = None, requires_env: list[str] | None = None, is_async: bool = False,
        description: str = "", emoji: str = "", override: bool = False,
    ) -> None:
        """Add a tool (Hermes's signature). ``check_fn`` and ``requires_env`` are not read here; ``override``
        of a built-in tool is refused when the plugin's tools are applied.

        Raises:
            TypeError: ``schema`` is not a mapping or ``handler`` is not callable.
        """
        if not isinstance(schema, Mapping):
            raise TypeError(f"tool {name!r}: schema must be a mapping, got {type(schema).__name__}")
        if not callable(handler):
            raise TypeError(f"tool {name!r}: handler is not callable")
        if description and "description" not in schema:
            schema = {**schema, "description": description}
        self.tools.append(PluginTool(name, toolset, dict(schema), tool_handler(handler, is_async), emoji or "🔌"))

    def register_hook(self, hook_name: str, callback: Callable[..., Any]) -> None:
        """Run ``callback(**fields)`` on ``hook_name``; an event this daemon does not fire is noted, not an error.

        Raises:
            TypeError: ``callback`` is not callable.
        """
        if not callable(callback):
            raise TypeError(f"hook {hook_name!r}: callback is not callable")
        if hook_name not in HOOK_EVENTS:
            self.notes.append(f"hook {hook_name}: not fired here")
            return
        self.hooks.append(Hook.of_callable(hook_name, f"plugin {self.name}", callback))

    def register_provider(
        self, name: str, *, base_url: str, api_mode: str | None = None, key_env: str | None = None,
        models: Sequence[str] = (),
    ) -> None:
        """Add a model provider: ``model.provider: NAME`` then sends requests to ``base_url``, speaking
        ``api_mode`` (unset: detected from the URL, else Chat Completions), with the key in the environment
        variable ``key_env`` (unset: no key). ``models`` are the ones it serves, as shown by ``plugins list``.

        Raises:
            ValueError: a bad name, URL or mode (the plugin fails to load).
        """
        self.providers.append(PluginProvider(name, self.name, base_url, api_mode, key_env, models))

    def register_platform(
        self, name: str, factory: Callable[[Any], Any] | str | None = None, *args: Any,
        adapter_factory: Callable[..., Any] | None = None, **kwargs: Any,
    ) -> None:
        """Add a messaging platform (ours): ``factory(setup)`` builds its adapter, a ``PlatformAdapter``
        subclass, run under the daemon's ``platform`` supervisor when ``platforms.NAME.enabled``.

        Hermes's form (``name, label, adapter_factory, check_fn, ...``) builds an asyncio adapter, which
        cannot run in this Trio daemon: it is noted as not taken, and the rest of the plugin loads.

        Raises:
            ValueError: ``name`` is not a lower-case word.
        """
        if isinstance(factory, str) or adapter_factory is not None or not callable(factory):
            self.notes.append(f"platform {name}: Hermes's asyncio platform adapters cannot run here")
            return
        if not isinstance(name, str) or not name.isidentifier() or name != name.lower():
            raise ValueError(f"a platform name must be a lower-case word, got {name!r}")
        self.platforms.append(PluginPlatform(name, self.name, factory))

    def __getattr__(self, attribute: str) -> Callable[..., None]:
        """Hermes's other ``register_*`` calls: each is noted as not taken, and returns nothing."""
        if not attribute.startswith("register_"):
            raise AttributeError(attribute)

        def not_taken(*args: Any, **kwargs: Any) -> None:
            what = attribute.removeprefix("register_")
            named = args[0] if args and isinstance(args[0], str) else kwargs.get("name")
            self.notes.append(f"{what} {named}: not supported here" if isinstance(named, str) else f"{what}: not supported here")

        return not_taken


def tool_handler(handler: Callable[..., Any], is_async: bool) -> Handler:
    """Hermes's ``handler(args, **kwargs)`` as this registry's ``async handler(args, ctx) -> ToolResult``."""

    async def run(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        call = functools.partial(handler, args, task_id=ctx.session_id)
        if is_async or inspect.iscoroutinefunction(handler):
            result = await call()
        else:
            # Blocking, as Hermes's handlers are: a thread, left behind when the call is interrupted.
            result = await trio.to_thread.run_sync(call, abandon_on_cancel=True)
        return _as_result(result)

    return run


def _as_result(result: Any) -> ToolResult:
    """A Hermes handler's return value as a result.

    Raises:
        ToolError: it reports an error (``{"error": ...}``).
    """
    payload: Any = result
    if isinstance(result, (str, bytes)):
        text = result.decode("utf-8", errors="replace") if isinstance(result, bytes) else result
        try:
            payload = json.loads(text)
        except json.JSONDecodeError:
            payload = {"result": text}
    if not isinstance(payload, Mapping):
        payload = {"result": payload}
    if "error" in payload and payload["error"]:
        raise ToolError(str(payload["error"]))
    return ToolResult(payload)
