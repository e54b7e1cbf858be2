"""Configuration sections ``hooks`` and ``plugins``: the user's own code run on the agent's events.

Hermes's names and shapes. ``hooks`` maps an event to a list of hooks; each is a ``command`` (run with the
event's JSON on stdin, its answer read from stdout) or, ours, a ``python`` callable (``module:function``),
with Hermes's ``matcher`` (a regular expression a tool's name must match in full, for the tool events) and
``timeout`` (seconds, 1 to 300, default 60). ``on_error`` (ours) says what a ``pre_tool_call`` hook that
fails, hangs past its timeout or answers garbage does to the call: ``allow`` (Hermes's behaviour: the call
runs) or ``block``. ``plugins.enabled`` lists the installed plugins to load (Hermes's opt-in: an installed
plugin not named there is listed, not loaded); ``plugins.disabled`` wins over it.
"""

from __future__ import annotations

import re
from typing import Any

import attrs
from attrs import validators as v

from config.validators import integer, optional_str, str_tuple

__all__ = [
    "DEFAULT_HOOK_TIMEOUT",
    "HOOK_EVENTS",
    "HOOK_FAILURE_ANSWERS",
    "MAX_HOOK_TIMEOUT",
    "PLUGIN_ENTRY_POINT_GROUPS",
    "TOOL_EVENTS",
    "HookEntry",
    "HooksConfig",
    "PluginsConfig",
]

#: Hermes's default and longest timeout of one hook, in seconds.
DEFAULT_HOOK_TIMEOUT = 60
MAX_HOOK_TIMEOUT = 300
#: What a failed ``pre_tool_call`` hook does to the call.
HOOK_FAILURE_ANSWERS = ("allow", "block")
#: Where installed plugins are found: Hermes's entry-point group first (a Hermes plugin installs as it is),
#: then ours.
PLUGIN_ENTRY_POINT_GROUPS = ("hermes_agent.plugins", "hermes_actors.plugins")
#: The events whose hooks may name a ``matcher``.
TOOL_EVENTS = frozenset({"pre_tool_call", "post_tool_call"})


def _check_matcher(entry: HookEntry, attribute: attrs.Attribute[str | None], value: str | None) -> None:
    if value is None:
        return
    try:
        re.compile(value)
    except re.error as exc:
        raise ValueError(f"matcher {value!r} is not a regular expression: {exc}") from None


def _strip(value: Any) -> Any:
    """A YAML-folded value's stray whitespace removed (a matcher of " terminal" would never match)."""
    return value.strip() or None if isinstance(value, str) else value


@attrs.frozen
class HookEntry:
    """One hook on one event.

    Attributes:
        command: the program and its arguments, split as a shell would (no shell runs it; ``~`` expands).
        python: ``module:function``, a callable of an importable module (ours); given the payload, it
            returns the answer a command would print (a dict, or None).
        matcher: for ``pre_tool_call`` / ``post_tool_call``: the tool names it runs for (a regular
            expression matched in full); None: every tool.
        timeout: seconds the hook may take.
        on_error: what a failed ``pre_tool_call`` hook does to its call: ``allow`` it (Hermes) or ``block`` it.
    """

    command: str | None = attrs.field(default=None, converter=_strip, validator=optional_str)
    python: str | None = attrs.field(default=None, converter=_strip, validator=optional_str)
    matcher: str | None = attrs.field(default=None, converter=_strip, validator=[optional_str, _check_matcher])
    timeout: int = attrs.field(default=DEFAULT_HOOK_TIMEOUT, validator=integer(ge=1, le=MAX_HOOK_TIMEOUT))
    on_error: str = attrs.field(default="allow", validator=v.in_(HOOK_FAILURE_ANSWERS))

    def __attrs_post_init__(self) -> None:
        if (self.command is None) == (self.python is None):
            raise ValueError("a hook needs exactly one of command or python")
        if self.python is not None and ":" not in self.python:
            raise ValueError(f"python {self.python!r} must name module:function")

    @property
    def label(self) -> str:
        """How logs and listings name it."""
        return self.command if self.command is not None else f"python {self.python}"


@attrs.frozen
class HooksConfig:
    """Section ``hooks`` (Hermes's): the hooks of each event this daemon fires.

    ``pre_tool_call`` may block the call (its reason becomes the tool's result); ``pre_llm_call`` runs as a
    turn starts, ``post_llm_call`` when it ends with a reply, ``on_session_end`` when any turn ends (as
    Hermes fires them); ``on_session_start`` before a new session's first turn; ``pre_approval_request`` and
    ``post_approval_response`` around a command's approval. A ``pre_llm_call`` answer's ``context`` is added
    to the turn's message as the model gets it; the other events' answers are ignored.
    """

    pre_tool_call: tuple[HookEntry, ...] = ()
    post_tool_call: tuple[HookEntry, ...] = ()
    pre_llm_call: tuple[HookEntry, ...] = ()
    post_llm_call: tuple[HookEntry, ...] = ()
    on_session_start: tuple[HookEntry, ...] = ()
    on_session_end: tuple[HookEntry, ...] = ()
    pre_approval_request: tuple[HookEntry, ...] = ()
    post_approval_response: tuple[HookEntry, ...] = ()

    def __attrs_post_init__(self) -> None:
        for event in attrs.fields(HooksConfig):
            if event.name in TOOL_EVENTS:
                continue
            for index, entry in enumerate(getattr(self, event.name)):
                if entry.matcher is not None:
                    raise ValueError(f"hooks.{event.name}[{index}].matcher: only tool events take a matcher")

    def by_event(self) -> dict[str, tuple[HookEntry, ...]]:
        """The configured hooks of each event that has any."""
        return {field.name: getattr(self, field.name) for field in attrs.fields(HooksConfig) if getattr(self, field.name)}


#: Every event a hook may be configured on (the fields of :class:`HooksConfig`).
HOOK_EVENTS: tuple[str, ...] = tuple(field.name for field in attrs.fields(HooksConfig))


@attrs.frozen
class PluginsConfig:
    """Section ``plugins`` (Hermes's): which installed plugins load.

    Attributes:
        enabled: the plugins to load, by entry-point name; an installed plugin not named is listed, not
            loaded (Hermes's opt-in).
        disabled: never loaded, even when enabled.
    """

    enabled: tuple[str, ...] = attrs.field(default=(), converter=tuple, validator=str_tuple)
    disabled: tuple[str, ...] = attrs.field(default=(), converter=tuple, validator=str_tuple)
