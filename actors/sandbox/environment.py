"""The child's environment: the allow-list (``tools.jail.environment``, docs/DECISIONS.md#d-env-allow-list),
plus what the sandbox needs."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence

from actors.sandbox.stubs import SOCKET_ENV, TOKEN_ENV
from tools.jail.environment import allowed_environment


def child_environment(
    parent: Mapping[str, str],
    *,
    sandbox_dir: str,
    socket_path: str,
    token: str,
    passthrough: Iterable[str] = (),
    site_packages: Sequence[str] = (),
) -> dict[str, str]:
    """Build the environment of the sandbox child.

    Keeps the safe system variables of ``parent`` unless their name looks secret, adds the explicitly
    passed-through names (``terminal.env_passthrough``, skill variables) even when they look secret,
    and sets ``PYTHONPATH`` (the sandbox directory, then ``site_packages``), the RPC socket and token.

    Args:
        parent: The user's environment (the daemon's).
        sandbox_dir: The private directory holding ``hermes_tools.py``.
        socket_path: Path of the RPC socket.
        token: The per-execution secret the stub presents.
        passthrough: Names copied from ``parent`` whatever they look like.
        site_packages: Where the script's imports are found besides the sandbox directory. The child
            runs with ``-S``: ``site`` would also run every ``.pth`` file (an editable install's import
            hook alone cost 10 ms per run), so what it would add to the path comes from here instead.
    """
    env = allowed_environment(parent, passthrough)
    env.update(
        PYTHONPATH=os.pathsep.join([sandbox_dir, *site_packages]),
        PYTHONDONTWRITEBYTECODE="1",
        PYTHONIOENCODING="utf-8",
        PYTHONUNBUFFERED="1",
    )
    env[SOCKET_ENV] = socket_path
    env[TOKEN_ENV] = token
    return env
