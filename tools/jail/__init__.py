"""The jail: every process a tool starts runs under its session's sandbox policy.

``policy`` says what a session may read and write; the launcher (one per daemon) turns a policy
into a bubblewrap jail around each process, and the in-process file tools ask the same policy.
"""

from tools.jail.policy import (
    HiddenPath,
    JailPolicy,
    PathRefused,
    SandboxMode,
    SandboxModeRefused,
    build_policy,
    resolve_mode,
)
from tools.jail.session import SessionJail

__all__ = [
    "HiddenPath",
    "JailPolicy",
    "PathRefused",
    "SandboxMode",
    "SandboxModeRefused",
    "SessionJail",
    "build_policy",
    "resolve_mode",
]
