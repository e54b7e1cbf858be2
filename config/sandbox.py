"""Configuration of execute_code (yaml section ``code_execution``)."""

from __future__ import annotations

from typing import Any

import attrs
from attrs import validators as v

__all__ = ["CodeExecutionConfig"]


def _number(minimum: float, *, strict: bool) -> Any:
    """A validator for a real number (never a bool) above ``minimum`` (or at least it, when not strict)."""

    def check(instance: object, attribute: attrs.Attribute, value: object) -> None:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"{attribute.name} must be a number, got {value!r}")
        if value < minimum or (strict and value == minimum):
            bound = ">" if strict else ">="
            raise ValueError(f"{attribute.name} must be {bound} {minimum:g}, got {value!r}")

    return check


def _integer(minimum: int) -> Any:
    """A validator for an int (never a bool) of at least ``minimum``."""

    def check(instance: object, attribute: attrs.Attribute, value: object) -> None:
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{attribute.name} must be an integer, got {value!r}")
        if value < minimum:
            raise ValueError(f"{attribute.name} must be >= {minimum}, got {value!r}")

    return check


@attrs.frozen(kw_only=True)
class CodeExecutionConfig:
    """Limits of one execute_code run; defaults are the seeds' values.

    Attributes:
        timeout: Seconds the whole script may run before its process group is killed.
        max_tool_calls: Tool calls one script may make; later calls get an error result.
        per_call_timeout: Seconds one tool call may take (inside the overall timeout).
        max_stdout_bytes: Stdout bytes kept (head 40 %, rolling tail 60 %).
        max_stderr_bytes: Stderr bytes kept, shown after a non-zero exit.
        kill_grace_seconds: Seconds between SIGTERM and SIGKILL to the process group.
        memory_limit_mb: Address-space limit of the child in MiB, None for no limit.
        strict: Run the child with ``-S`` so site-packages cannot be imported.
        progress_interval_seconds: Seconds between progress events while the script runs quietly.
    """

    timeout: float = attrs.field(default=300.0, validator=_number(0, strict=True))
    max_tool_calls: int = attrs.field(default=50, validator=_integer(0))
    per_call_timeout: float = attrs.field(default=300.0, validator=_number(0, strict=True))
    max_stdout_bytes: int = attrs.field(default=50_000, validator=_integer(100))
    max_stderr_bytes: int = attrs.field(default=10_000, validator=_integer(100))
    kill_grace_seconds: float = attrs.field(default=5.0, validator=_number(0, strict=False))
    memory_limit_mb: int | None = attrs.field(default=None, validator=v.optional(_integer(16)))
    strict: bool = attrs.field(default=False, validator=v.instance_of(bool))
    progress_interval_seconds: float = attrs.field(default=5.0, validator=_number(0, strict=True))
