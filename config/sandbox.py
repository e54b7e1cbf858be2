"""Configuration of execute_code (yaml section ``code_execution``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
from attrs import validators as v

from config.validators import integer, non_empty_str, non_negative_number, positive_number, str_tuple

__all__ = [
    "DEFAULT_DENY_READ", "LIMIT_NAMES", "SANDBOX_MODES", "CodeExecutionConfig", "SandboxConfig", "SandboxLimits",
    "limit_overrides",
]  # fmt: skip


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
        strict: Leave site-packages off the child's path, so they cannot be imported.
        progress_interval_seconds: Seconds between progress events while the script runs quietly.
        spare_interpreter: Keep the next run's jailed interpreter started and waiting after a session's run
            (its script's first line then runs in about a millisecond instead of the jail's and python's start).
        spare_idle_seconds: How long such a spare may wait unused before it is stopped.
    """

    timeout: float = attrs.field(default=300.0, validator=positive_number)
    max_tool_calls: int = attrs.field(default=50, validator=integer(ge=0))
    per_call_timeout: float = attrs.field(default=300.0, validator=positive_number)
    max_stdout_bytes: int = attrs.field(default=50_000, validator=integer(ge=100))
    max_stderr_bytes: int = attrs.field(default=10_000, validator=integer(ge=100))
    kill_grace_seconds: float = attrs.field(default=5.0, validator=non_negative_number)
    memory_limit_mb: int | None = attrs.field(default=None, validator=v.optional(integer(ge=16)))
    strict: bool = attrs.field(default=False, validator=v.instance_of(bool))
    progress_interval_seconds: float = attrs.field(default=5.0, validator=positive_number)
    spare_interpreter: bool = attrs.field(default=True, validator=v.instance_of(bool))
    spare_idle_seconds: float = attrs.field(default=300.0, validator=positive_number)


SANDBOX_MODES = ("read-only", "workspace-write", "full-access")
"""The jail's policy modes, narrowest first (after Codex's)."""

# Credential stores hidden from every jailed process and every file tool unless the user trims the list.
DEFAULT_DENY_READ: tuple[str, ...] = (
    "~/.ssh", "~/.aws", "~/.gnupg", "~/.config/gcloud", "~/.azure", "~/.kube", "~/.docker",
    "~/.netrc", "~/.pgpass", "~/.git-credentials", "/var/run/docker.sock", "/run/docker.sock",
)  # fmt: skip


@attrs.frozen(kw_only=True)
class SandboxLimits:
    """Section ``sandbox.limits``: what one session's processes may use together, so none starves the others.

    The defaults keep a laptop's builds working (a parallel compile, a browser, a test suite) while 200
    sessions on one server cannot take the machine: each is a ceiling, not a reservation. A session may
    ask for less, never more (see :meth:`narrowed`).

    Attributes:
        pids: Processes and threads at once (a ``make -j``, a JVM and a browser fit in 1,024).
        memory_mb: Memory of all its processes, page cache and its ``/tmp`` and ``/dev/shm`` included.
        tmp_mb: Size of the tmpfs holding every session's ``/tmp`` (where the daemon may mount one); a
            session's own share counts toward its ``memory_mb``. One file system for all, not one each:
            every mount is copied into every jail, and 200 of them made each process start 4 ms slower.
        shm_mb: Size of ``/dev/shm`` (a browser wants more than Docker's 64 MiB).
        cpu_weight: Its share of the CPU when sessions compete (cgroup ``cpu.weight``: 100 is an equal
            share, 1 to 10,000); an idle machine lets any session use every core.
    """

    pids: int = attrs.field(default=1024, validator=integer(ge=16))
    memory_mb: int = attrs.field(default=2048, validator=integer(ge=64))
    tmp_mb: int = attrs.field(default=4096, validator=integer(ge=1))
    shm_mb: int = attrs.field(default=256, validator=integer(ge=1))
    cpu_weight: int = attrs.field(default=100, validator=integer(ge=1, le=10_000))

    def narrowed(self, requested: Mapping[str, int]) -> SandboxLimits:
        """These limits lowered to what ``requested`` asks where it asks for less; a session never gets more.

        Raises:
            ValueError: ``requested`` names a limit that does not exist, or a value out of its range.
            TypeError: a value is not an integer.
        """
        if not requested:
            # Every session that asks for nothing of its own (each HTTP API completion's) comes this way:
            # the limits themselves (frozen), not two validated copies of them.
            return self
        unknown = sorted(set(requested) - set(LIMIT_NAMES))
        if unknown:
            raise ValueError(f"unknown sandbox limit {unknown[0]!r}: use one of {', '.join(LIMIT_NAMES)}")
        lowered = attrs.evolve(self, **requested)  # validates each value
        return attrs.evolve(self, **{name: min(getattr(self, name), getattr(lowered, name)) for name in requested})


LIMIT_NAMES: tuple[str, ...] = tuple(field.name for field in attrs.fields(SandboxLimits))
"""The limits' names, as ``config.yaml`` spells them."""


def limit_overrides(instance: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    """Validator of a front door's own limits (``platforms.api_server.limits``): known names, valid values."""
    if value is None:
        return
    if not isinstance(value, Mapping):
        raise TypeError(f"{attribute.name} must be a mapping of limits, got {value!r}")
    try:
        SandboxLimits().narrowed(value)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"{attribute.name}: {exc}") from None


@attrs.frozen(kw_only=True)
class SandboxConfig:
    """Section ``sandbox``: the jail every process a tool starts runs in, and what the file tools may touch.

    Attributes:
        mode: The default policy of a session: ``read-only`` (nothing writable but a private /tmp),
            ``workspace-write`` (also the session's working directory and ``writable_roots``) or
            ``full-access`` (no jail: tools run with the daemon's authority; logged at start).
        max_mode: The widest mode a session may ask for (``chat --sandbox``, the API's config).
        writable_roots: More directories writable under ``workspace-write``.
        deny_read: Paths hidden from tools entirely (not even readable), besides the daemon's home.
        network: False leaves a jailed process only its own loopback.
        ssh_agent: Bind the ssh-agent's socket (``SSH_AUTH_SOCK``) into the jail.
        bwrap: ``auto`` (the bundled ``bwrap``, else the system's) or the path of a ``bwrap`` to use.
        limits: What one session's processes may use (``sandbox.limits``).
        tools_cpu_weight: The CPU weight of every session's processes together against the daemon's own 100
            (the control group holding the sessions' groups; where there is none, each jail's nice value): on
            a busy machine the daemon, which serves every session, runs before the commands it started,
            while on an idle one they use every core. 100 makes them equals.
    """

    mode: str = attrs.field(default="workspace-write", validator=v.in_(SANDBOX_MODES))
    max_mode: str = attrs.field(default="full-access", validator=v.in_(SANDBOX_MODES))
    writable_roots: tuple[str, ...] = attrs.field(default=(), converter=tuple, validator=str_tuple)
    deny_read: tuple[str, ...] = attrs.field(default=DEFAULT_DENY_READ, converter=tuple, validator=str_tuple)
    network: bool = attrs.field(default=True, validator=v.instance_of(bool))
    ssh_agent: bool = attrs.field(default=False, validator=v.instance_of(bool))
    bwrap: str = attrs.field(default="auto", validator=non_empty_str)
    limits: SandboxLimits = attrs.Factory(SandboxLimits)
    tools_cpu_weight: int = attrs.field(default=10, validator=integer(ge=1, le=10_000))

    @max_mode.validator
    def _mode_within_max(self, attribute: attrs.Attribute, value: str) -> None:
        if SANDBOX_MODES.index(self.mode) > SANDBOX_MODES.index(value):
            raise ValueError(f"mode {self.mode!r} is wider than max_mode {value!r}")
