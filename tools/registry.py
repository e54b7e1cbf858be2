"""The tool registry: what tools exist, their schemas, handlers and policies.

A ``ToolRegistry`` is an object owned by the daemon and passed down (never a
module-level singleton).  It turns registered entries into the model-facing
definition list (``get_definitions``), caches availability checks, applies
dynamic schema overrides and caps oversized results.  Which tools a session
sees is decided by toolsets (``tools.toolsets``); how a call runs is
``tools.dispatch``.
"""

from __future__ import annotations

import logging
import math
import re
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from tools.errors import RegistrationError, ToolShadowingError

if TYPE_CHECKING:
    from tools.context import ToolContext
    from tools.results import ToolResult

__all__ = [
    "CHECK_FN_TTL_SECONDS",
    "DEFAULT_MAX_RESULT_SIZE_CHARS",
    "CheckArgs",
    "CheckFn",
    "Loosen",
    "Handler",
    "SchemaOverride",
    "ToolEntry",
    "ToolRegistry",
]

Handler = Callable[[dict[str, Any], "ToolContext"], Awaitable["ToolResult"]]
"""``async def handler(args, ctx) -> ToolResult``; raises ``ToolError`` with the model's message on failure."""
CheckFn = Callable[[], bool]
#: Reads a call's raw arguments the lenient way the tool's Hermes counterpart does, before the schema check.
Loosen = Callable[[Mapping[str, Any]], dict[str, Any]]
"""Zero-argument availability probe; a tool whose check fails is hidden from the model."""
CheckArgs = Callable[[Mapping[str, Any]], None]
"""The tool's own check of arguments that passed its schema, made before the handler runs: pure and
synchronous (no disk, no clock); raises ``ToolError`` with the model's message."""
SchemaOverride = Callable[[frozenset[str]], "Mapping[str, Any] | None"]
"""Returns schema keys to patch in at definition time, given the names of the tools the list offers
(so a description can name exactly the tools of the session it is built for)."""

logger = logging.getLogger(__name__)

CHECK_FN_TTL_SECONDS = 30.0
DEFAULT_MAX_RESULT_SIZE_CHARS = 100_000

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def _as_tuple(value: str | Iterable[str] | None) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    return tuple(value)


@attrs.frozen
class ToolEntry:
    """One registered tool.

    Attributes:
        name: the name the model calls.
        toolset: the toolset the tool belongs to (its owner for shadowing checks).
        schema: JSON-Schema style dict with ``description`` and ``parameters``.
        handler: the coroutine function that runs a call.
        check_fn: optional availability probe.
        max_result_size_chars: results longer than this are cut with a notice.
        parallel_safe: whether calls may run beside other tool calls.
        path_scoped: argument names holding filesystem paths (for overlap checks).
        emoji: shown next to the tool's progress lines.
        loosen: rewrites the raw arguments before the schema check, where the tool's Hermes counterpart
            accepts forms its schema does not (clarify's dict-shaped or surplus choices).
        check_args: the tool's own check of the arguments, after the schema's (write_file's empty path); a
            call it rejects is answered before anything runs.
    """

    name: str
    toolset: str
    schema: Mapping[str, Any]
    handler: Handler
    check_fn: CheckFn | None = None
    max_result_size_chars: int = DEFAULT_MAX_RESULT_SIZE_CHARS
    parallel_safe: bool = False
    path_scoped: tuple[str, ...] = ()
    emoji: str = "🔧"
    loosen: Loosen | None = None
    check_args: CheckArgs | None = None


@attrs.frozen
class _Memo:
    generation: int
    valid_until: float
    definitions: tuple[dict[str, Any], ...]


class ToolRegistry:
    """Registered tools and the model-facing view of them.

    Every mutation (register, deregister, schema override, ``invalidate``)
    bumps ``generation``, which invalidates memoized definition lists.

    Args:
        clock: returns the current time in seconds; drives the 30 s check_fn
            cache.  Pass ``trio.current_time`` to make it follow Trio's clock.
        default_max_result_size_chars: cap used when ``register`` gets none.
    """

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.monotonic,
        default_max_result_size_chars: int = DEFAULT_MAX_RESULT_SIZE_CHARS,
    ) -> None:
        self._clock = clock
        self._default_cap = default_max_result_size_chars
        self._tools: dict[str, ToolEntry] = {}
        self._overrides: dict[str, SchemaOverride] = {}
        # Invariant: an entry is (time checked, result); stale after CHECK_FN_TTL_SECONDS.
        self._check_cache: dict[CheckFn, tuple[float, bool]] = {}
        self._memo: dict[frozenset[str], _Memo] = {}
        self._generation = 0
        # Toolsets that come with every platform toolset (a plugin's), beside the MCP servers' own.
        self._joining: set[str] = set()

    @property
    def generation(self) -> int:
        """Counter bumped on every change that can alter the definition list."""
        return self._generation

    def invalidate(self) -> None:
        """Drop memoized definitions and cached checks (e.g. after a config change)."""
        self._check_cache.clear()
        self._bump()

    def _bump(self) -> None:
        self._generation += 1
        self._memo.clear()

    def register(
        self,
        name: str,
        toolset: str,
        schema: Mapping[str, Any],
        handler: Handler,
        check_fn: CheckFn | None = None,
        max_result_size_chars: int | None = None,
        parallel_safe: bool = False,
        path_scoped: str | Iterable[str] | None = None,
        emoji: str = "🔧",
        override: bool = False,
        loosen: Loosen | None = None,
        check_args: CheckArgs | None = None,
    ) -> ToolEntry:
        """Register a tool and return its entry.

        Re-registering a name within the same toolset replaces it (a refresh).

        Raises:
            ToolShadowingError: the name belongs to another toolset and
                ``override`` is false (MCP-to-MCP refreshes are allowed).
            RegistrationError: bad name, schema or cap.
        """
        if not _NAME.match(name):
            raise RegistrationError(f"invalid tool name {name!r}: use 1-64 letters, digits, '_' or '-'")
        if not toolset:
            raise RegistrationError(f"tool {name!r} needs a toolset")
        params = schema.get("parameters", {"type": "object", "properties": {}})
        if not isinstance(params, Mapping) or params.get("type", "object") != "object":
            raise RegistrationError(f"tool {name!r}: schema parameters must be a JSON object schema")
        cap = self._default_cap if max_result_size_chars is None else max_result_size_chars
        if cap < 1:
            raise RegistrationError(f"tool {name!r}: max_result_size_chars must be positive, got {cap}")
        scoped = _as_tuple(path_scoped)
        unknown = [arg for arg in scoped if arg not in params.get("properties", {})]
        if unknown:
            raise RegistrationError(f"tool {name!r}: path_scoped names unknown arguments {unknown}")
        existing = self._tools.get(name)
        if existing is not None and existing.toolset != toolset:
            both_mcp = existing.toolset.startswith("mcp-") and toolset.startswith("mcp-")
            if not (both_mcp or override):
                raise ToolShadowingError(
                    f"tool {name!r} already belongs to toolset {existing.toolset!r}; "
                    f"registering it for {toolset!r} needs override=True"
                )
        entry = ToolEntry(
            name=name,
            toolset=toolset,
            schema=dict(schema),
            handler=handler,
            check_fn=check_fn,
            max_result_size_chars=cap,
            parallel_safe=parallel_safe,
            path_scoped=scoped,
            emoji=emoji,
            loosen=loosen,
            check_args=check_args,
        )
        self._tools[name] = entry
        self._bump()
        return entry

    def deregister(self, name: str) -> None:
        """Remove a tool (and its schema override); unknown names are ignored."""
        if self._tools.pop(name, None) is not None:
            self._overrides.pop(name, None)
            self._bump()

    def set_schema_override(self, name: str, fn: SchemaOverride | None) -> None:
        """Install (or with ``None`` remove) a dynamic schema patch for ``name``.

        Raises:
            KeyError: no such tool.
        """
        if name not in self._tools:
            raise KeyError(name)
        if fn is None:
            self._overrides.pop(name, None)
        else:
            self._overrides[name] = fn
        self._bump()

    def get(self, name: str) -> ToolEntry | None:
        """Return the entry for ``name``, or None."""
        return self._tools.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def names(self) -> list[str]:
        """All registered tool names, sorted."""
        return sorted(self._tools)

    def toolset_names(self) -> set[str]:
        """Names of every toolset some registered tool belongs to."""
        return {entry.toolset for entry in self._tools.values()}

    def join_platform_toolsets(self, toolset: str) -> None:
        """Offer ``toolset`` to every session offered a platform toolset (``hermes-*``), as an MCP server's is."""
        self._joining.add(toolset)
        self._bump()

    def joining_toolsets(self) -> set[str]:
        """The toolsets :meth:`join_platform_toolsets` named."""
        return set(self._joining)

    def tools_in_toolset(self, toolset: str) -> set[str]:
        """Names of the registered tools tagged with ``toolset``."""
        return {entry.name for entry in self._tools.values() if entry.toolset == toolset}

    def is_available(self, name: str) -> bool:
        """Whether ``name`` is registered and its check_fn passes (cached 30 s)."""
        entry = self._tools.get(name)
        return entry is not None and self._check(entry.check_fn)

    def available_for(self, name: str) -> float:
        """Seconds for which :meth:`is_available` is known to answer True for ``name`` (its cached check's
        remaining life; infinite without a check); 0.0 when it answers False now. A change to the registry
        (its :attr:`generation`) ends it sooner."""
        entry = self._tools.get(name)
        if entry is None:
            return 0.0
        ok, until = self._check_until(entry.check_fn)
        return until - self._clock() if ok else 0.0

    def _check(self, check_fn: CheckFn | None) -> bool:
        return self._check_until(check_fn)[0]

    def _check_until(self, check_fn: CheckFn | None) -> tuple[bool, float]:
        """The check's result and the time until which it may be reused."""
        if check_fn is None:
            return True, math.inf
        now = self._clock()
        cached = self._check_cache.get(check_fn)
        if cached is not None and now - cached[0] < CHECK_FN_TTL_SECONDS:
            return cached[1], cached[0] + CHECK_FN_TTL_SECONDS
        try:
            ok = bool(check_fn())
        except Exception:
            # A probe that crashes means "not available", never a failed turn.
            logger.warning("check_fn %r raised; treating its tool as unavailable", check_fn, exc_info=True)
            ok = False
        self._check_cache[check_fn] = (now, ok)
        return ok, now + CHECK_FN_TTL_SECONDS

    def get_definitions(self, names: Iterable[str]) -> list[dict[str, Any]]:
        """Build the OpenAI-style tool list for ``names`` (sorted by name).

        The four steps: drop tools whose check_fn fails, force the registered
        name into the schema, apply the dynamic override (given the names
        offered), wrap as
        ``{"type": "function", "function": schema}``.  Unknown names are
        skipped.  Results are memoized per name set until the generation
        changes or the oldest check_fn result used expires; treat them as read-only.
        """
        key = frozenset(names)
        memo = self._memo.get(key)
        if memo is not None and memo.generation == self._generation and self._clock() < memo.valid_until:
            return list(memo.definitions)
        offered: list[ToolEntry] = []
        valid_until = math.inf
        for name in sorted(key):
            entry = self._tools.get(name)
            if entry is None:
                continue
            available, until = self._check_until(entry.check_fn)
            valid_until = min(valid_until, until)
            if available:
                offered.append(entry)
        names_offered = frozenset(entry.name for entry in offered)
        definitions: list[dict[str, Any]] = []
        for entry in offered:
            schema = {**entry.schema, "name": entry.name}
            override = self._overrides.get(entry.name)
            if override is not None:
                schema.update(self._override_patch(entry.name, override, names_offered))
            definitions.append({"type": "function", "function": schema})
        self._memo[key] = _Memo(self._generation, valid_until, tuple(definitions))
        return definitions

    @staticmethod
    def _override_patch(name: str, override: SchemaOverride, offered: frozenset[str]) -> Mapping[str, Any]:
        try:
            patch = override(offered)
        except Exception:
            # A broken override must not take the tool list (and so the turn) down: use the plain schema.
            logger.warning("schema override of %s raised; using its registered schema", name, exc_info=True)
            return {}
        return patch if isinstance(patch, Mapping) else {}

    def cap_result(self, name: str, result: str) -> str:
        """Cut ``result`` to the tool's ``max_result_size_chars`` with a notice of what was omitted."""
        entry = self._tools.get(name)
        cap = self._default_cap if entry is None else entry.max_result_size_chars
        if len(result) <= cap:
            return result
        omitted = len(result) - cap
        return (
            result[:cap]
            + f"\n\n[... {omitted:,} characters omitted: the result of {name} exceeded its "
            f"{cap:,}-character limit. Ask for a smaller part (offset/limit, a narrower pattern or path).]"
        )
