"""The child's environment: the seeds' scrubbing of secrets, plus what the sandbox needs."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from actors.sandbox.stubs import SOCKET_ENV, TOKEN_ENV

# A variable whose upper-cased name contains one of these is treated as a secret.
SECRET_MARKERS: tuple[str, ...] = (
    "KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL", "PASSWD", "AUTH",
    "DSN", "WEBHOOK", "CREDS", "BEARER", "APIKEY",
)  # fmt: skip

# Safe system variables passed to the child (exact names, or prefixes ending in "_").
SAFE_NAMES: frozenset[str] = frozenset(
    {"PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TERM", "TMPDIR", "TMP", "TEMP", "SHELL",
     "TZ", "VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_DEFAULT_ENV", "COLUMNS", "LINES", "PWD", "HOSTNAME"}
)  # fmt: skip
SAFE_PREFIXES: tuple[str, ...] = ("LC_", "XDG_")


def is_secret_name(name: str) -> bool:
    """Return True when a variable name looks like it holds a credential."""
    upper = name.upper()
    return any(marker in upper for marker in SECRET_MARKERS)


def _is_safe(name: str) -> bool:
    return name in SAFE_NAMES or name.startswith(SAFE_PREFIXES)


def child_environment(
    parent: Mapping[str, str],
    *,
    sandbox_dir: str,
    socket_path: str,
    token: str,
    passthrough: Iterable[str] = (),
) -> dict[str, str]:
    """Build the environment of the sandbox child.

    Keeps the safe system variables of ``parent`` unless their name looks secret, adds the explicitly
    passed-through names (``terminal.env_passthrough``, skill variables) even when they look secret,
    and sets ``PYTHONPATH`` to the sandbox directory alone plus the RPC socket and token.

    Args:
        parent: The daemon's environment.
        sandbox_dir: The private directory holding ``hermes_tools.py``.
        socket_path: Path of the RPC socket.
        token: The per-execution secret the stub presents.
        passthrough: Names copied from ``parent`` whatever they look like.
    """
    env = {name: value for name, value in parent.items() if _is_safe(name) and not is_secret_name(name)}
    for name in passthrough:
        if name in parent:
            env[name] = parent[name]
    env.update(
        PYTHONPATH=sandbox_dir,
        PYTHONDONTWRITEBYTECODE="1",
        PYTHONIOENCODING="utf-8",
        PYTHONUNBUFFERED="1",
    )
    env[SOCKET_ENV] = socket_path
    env[TOKEN_ENV] = token
    return env
