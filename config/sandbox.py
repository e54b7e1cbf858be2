"""Configuration of execute_code (yaml section ``code_execution``)."""

from __future__ import annotations

import attrs
from attrs import validators as v

_positive = [v.instance_of((int, float)), v.gt(0)]


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

    timeout: float = attrs.field(default=300.0, validator=_positive)
    max_tool_calls: int = attrs.field(default=50, validator=[v.instance_of(int), v.ge(0)])
    per_call_timeout: float = attrs.field(default=300.0, validator=_positive)
    max_stdout_bytes: int = attrs.field(default=50_000, validator=[v.instance_of(int), v.ge(100)])
    max_stderr_bytes: int = attrs.field(default=10_000, validator=[v.instance_of(int), v.ge(100)])
    kill_grace_seconds: float = attrs.field(default=5.0, validator=[v.instance_of((int, float)), v.ge(0)])
    memory_limit_mb: int | None = attrs.field(
        default=None, validator=v.optional([v.instance_of(int), v.ge(16)])
    )
    strict: bool = attrs.field(default=False, validator=v.instance_of(bool))
    progress_interval_seconds: float = attrs.field(default=5.0, validator=_positive)
