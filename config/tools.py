"""Configuration of the tool layer (yaml sections ``tools`` and ``memory``)."""

from __future__ import annotations

import attrs
from attrs import validators as v

from config.validators import integer, non_empty_str

__all__ = ["MemoryConfig", "ToolsConfig"]

_names = v.deep_iterable(member_validator=non_empty_str, iterable_validator=v.instance_of(tuple))


def _to_tuple(value: object) -> object:
    # YAML gives lists; frozen config wants tuples. Anything else is left for the validator to reject.
    return tuple(value) if isinstance(value, list) else value


@attrs.frozen(kw_only=True)
class ToolsConfig:
    """Which toolsets sessions get and how big a tool result may be.

    Attributes:
        enabled_toolsets: toolsets a session starts with; None means the default (``hermes-cli``).
        disabled_toolsets: toolsets removed even when an enabled one includes them.
        max_result_size_chars: default cap on one tool result (a tool may set its own).
        use_ripgrep: let search_files use ripgrep when it is installed.
        max_parallel_tools: most tool calls running at once in a batch or a sandbox.
    """

    enabled_toolsets: tuple[str, ...] | None = attrs.field(
        default=None, converter=_to_tuple, validator=v.optional(_names)
    )
    disabled_toolsets: tuple[str, ...] = attrs.field(default=(), converter=_to_tuple, validator=_names)
    max_result_size_chars: int = attrs.field(default=100_000, validator=integer(ge=1_000))
    use_ripgrep: bool = attrs.field(default=True, validator=v.instance_of(bool))
    max_parallel_tools: int = attrs.field(default=8, validator=integer(ge=1, le=64))


@attrs.frozen(kw_only=True)
class MemoryConfig:
    """The bounded memory stores (MEMORY.md and USER.md under ``HERMES_ACTORS_HOME/memories``).

    Attributes:
        memory_enabled: the agent's own notes (MEMORY.md).
        user_profile_enabled: what the agent knows about the user (USER.md).
        memory_char_limit: size limit of MEMORY.md in characters (~800 tokens).
        user_char_limit: size limit of USER.md in characters (~500 tokens).
        nudge_interval: every this many user turns, the background review looks for things worth
            remembering (Hermes's key and default; 0 turns the memory review off).
    """

    memory_enabled: bool = attrs.field(default=True, validator=v.instance_of(bool))
    user_profile_enabled: bool = attrs.field(default=True, validator=v.instance_of(bool))
    memory_char_limit: int = attrs.field(default=2_200, validator=integer(ge=100, le=100_000))
    user_char_limit: int = attrs.field(default=1_375, validator=integer(ge=100, le=100_000))
    nudge_interval: int = attrs.field(default=10, validator=integer(ge=0, le=10_000))
