"""The jail: every process a tool starts runs under its session's sandbox policy.

``policy`` says what a session may read and write; the launcher (one per daemon) turns a policy
into a bubblewrap jail around each process (no privilege whoever runs the daemon: ``_mounts``,
``_seccomp``), puts it under its session's limits (``limits``, ``cgroups``), and the in-process file
tools ask the same policy.
"""

from tools.jail.capture import HeadTailBuffer, drain
from tools.jail.environment import allowed_environment, is_secret_name, terminal_environment
from tools.jail.launcher import JailUnavailable, Launcher, LauncherClosed, LimitsNotApplied, open_launcher
from tools.jail.policy import (
    HiddenPath,
    JailPolicy,
    PathRefused,
    SandboxLimitsRefused,
    SandboxMode,
    SandboxModeRefused,
    build_policy,
    resolve_limits,
    resolve_mode,
)
from tools.jail.preflight import JailStatus
from tools.jail.process import JailedProcess
from tools.jail.resident import ResidentProcess, ResidentShell
from tools.jail.session import SessionJail

__all__ = [
    "HeadTailBuffer",
    "HiddenPath",
    "JailPolicy",
    "JailStatus",
    "JailUnavailable",
    "JailedProcess",
    "Launcher",
    "LauncherClosed",
    "LimitsNotApplied",
    "PathRefused",
    "ResidentProcess",
    "ResidentShell",
    "SandboxLimitsRefused",
    "SandboxMode",
    "SandboxModeRefused",
    "SessionJail",
    "allowed_environment",
    "build_policy",
    "drain",
    "is_secret_name",
    "open_launcher",
    "resolve_limits",
    "resolve_mode",
    "terminal_environment",
]
