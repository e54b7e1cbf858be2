"""Configuration of delegate_task subagents (yaml section ``delegation``)."""

from __future__ import annotations

import attrs
from attrs import validators as v

from config.validators import integer, number, positive_int, positive_number

__all__ = ["DelegationConfig"]


@attrs.frozen
class DelegationConfig:
    """Section ``delegation``: how many subagents, how deep, and how they are watched.

    Attributes:
        max_concurrent_children: tasks in one delegate_task batch (all run at once).
        max_spawn_depth: 1 means flat (children cannot delegate); at most 3.
        max_iterations: each child's iteration budget; the model cannot raise it.
        child_timeout_seconds: optional wall-clock limit per child (floor 30 s).
        orchestrator_enabled: whether role="orchestrator" children may delegate further.
        subagent_auto_approve: approve dangerous commands inside children instead of denying.
        stale_idle_seconds / stale_tool_seconds: no progress for this long marks a child stale.
        kill_stale: stop a stale child instead of only reporting it.
    """

    max_concurrent_children: int = attrs.field(default=3, validator=positive_int)
    max_spawn_depth: int = attrs.field(default=1, validator=integer(ge=1, le=3))
    max_iterations: int = attrs.field(default=50, validator=positive_int)
    child_timeout_seconds: float | None = attrs.field(default=None, validator=v.optional(number(ge=30)))
    orchestrator_enabled: bool = attrs.field(default=True, validator=v.instance_of(bool))
    subagent_auto_approve: bool = attrs.field(default=False, validator=v.instance_of(bool))
    stale_idle_seconds: float = attrs.field(default=450.0, validator=positive_number)
    stale_tool_seconds: float = attrs.field(default=1200.0, validator=positive_number)
    kill_stale: bool = attrs.field(default=False, validator=v.instance_of(bool))
