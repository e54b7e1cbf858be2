"""The child's environment: the seeds' allow-list (``tools.jail.environment``), plus what the sandbox needs."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from actors.sandbox.stubs import SOCKET_ENV, TOKEN_ENV
from tools.jail.environment import allowed_environment


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
        parent: The user's environment (the daemon's).
        sandbox_dir: The private directory holding ``hermes_tools.py``.
        socket_path: Path of the RPC socket.
        token: The per-execution secret the stub presents.
        passthrough: Names copied from ``parent`` whatever they look like.
    """
    env = allowed_environment(parent, passthrough)
    env.update(
        PYTHONPATH=sandbox_dir,
        PYTHONDONTWRITEBYTECODE="1",
        PYTHONIOENCODING="utf-8",
        PYTHONUNBUFFERED="1",
    )
    env[SOCKET_ENV] = socket_path
    env[TOKEN_ENV] = token
    return env
