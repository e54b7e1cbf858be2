"""The environment of every process a tool starts, built explicitly and never inherited whole.

The secret-name rule (:func:`is_secret_name`): a variable is dropped when its name is a known secret
without a marker (``DATABASE_URL``), or contains a secret marker (``KEY``, ``TOKEN``, ``PASSWORD`` ...),
unless it is a known non-secret whose name only contains a marker by accident (``SSH_AUTH_SOCK``,
``XAUTHORITY``, ``GIT_AUTHOR_NAME``).

- The terminal's shell (foreground and background) starts from the user's whole environment less
  :func:`is_terminal_secret` names: Hermes Agent's named blocklist of provider, tool and gateway
  variables (:data:`HERMES_BLOCKLIST`), then the secret-name rule for every name the list does not cover.
- execute_code's child gets the allow-list only (safe system variables, none whose name holds a
  marker; docs/DECISIONS.md#d-env-allow-list): :func:`allowed_environment`.

``terminal.env_passthrough`` names pass whatever they look like. Nothing of the daemon's own
(``HERMES_ACTORS_*``) ever passes, passed through or not.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping

from tools.jail._env_names import HERMES_BLOCKLIST, KNOWN_NOT_SECRET

__all__ = [
    "DAEMON_PREFIX",
    "EXECUTE_CODE_NAMES",
    "HERMES_BLOCKLIST",
    "KNOWN_NOT_SECRET",
    "SECRET_MARKERS",
    "SECRET_NAMES",
    "SHELL_MANAGED",
    "allowed_environment",
    "is_secret_name",
    "is_terminal_secret",
    "terminal_environment",
    "with_passthrough",
]

# A variable whose upper-cased name contains one of these is treated as a secret.
SECRET_MARKERS: tuple[str, ...] = (
    "KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH",
    "DSN", "WEBHOOK", "CREDS", "BEARER", "APIKEY",
)  # fmt: skip

# Secrets whose names carry no marker: connection strings with a password in them, and the like.
SECRET_NAMES: frozenset[str] = frozenset(
    {"DATABASE_URL", "REDIS_URL", "MONGODB_URI", "MONGO_URL", "AMQP_URL", "CELERY_BROKER_URL",
     "MYSQL_PWD", "PGPASSFILE", "NETRC", "VAULT_ADDR", "KUBECONFIG", "DOCKER_CONFIG"}
)  # fmt: skip

DAEMON_PREFIX = "HERMES_ACTORS_"
"""The daemon's own variables (its home, its socket): never given to a tool's process."""

# The seeds' allow-list for execute_code: exact names, or prefixes ending in "_".
EXECUTE_CODE_NAMES: frozenset[str] = frozenset(
    {"PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TERM", "TMPDIR", "TMP", "TEMP", "SHELL",
     "TZ", "VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_DEFAULT_ENV", "COLUMNS", "LINES", "PWD", "HOSTNAME"}
)  # fmt: skip
_EXECUTE_CODE_PREFIXES: tuple[str, ...] = ("LC_", "XDG_")

SHELL_MANAGED: frozenset[str] = frozenset({"_", "SHLVL", "PWD"})
"""Variables bash maintains itself: carrying them over would be wrong (SHLVL would grow by one per
command) or redundant (PWD is the cwd the terminal keeps anyway)."""


def is_secret_name(name: str) -> bool:
    """True when a variable of this name may hold a credential (or belongs to the daemon)."""
    upper = name.upper()
    if upper.startswith(DAEMON_PREFIX) or upper in SECRET_NAMES:
        return True
    if upper in KNOWN_NOT_SECRET:
        return False
    return any(marker in upper for marker in SECRET_MARKERS)


@functools.lru_cache(maxsize=4096)
def is_terminal_secret(name: str) -> bool:
    """True when the terminal's shell must not get a variable of this name: Hermes's blocklist, then the rule.

    Cached: every command filters the whole environment again, and its names repeat.
    """
    return name.upper() in HERMES_BLOCKLIST or is_secret_name(name)


def with_passthrough(env: dict[str, str], environ: Mapping[str, str], passthrough: Iterable[str]) -> dict[str, str]:
    """Copy into ``env`` each of ``passthrough``'s variables that ``environ`` has (never the daemon's own); returns ``env``."""
    for name in passthrough:
        if name in environ and not name.upper().startswith(DAEMON_PREFIX):
            env[name] = environ[name]
    return env


def terminal_environment(environ: Mapping[str, str], passthrough: Iterable[str] = ()) -> dict[str, str]:
    """The starting environment of a session's shell: the user's ``environ`` without secrets.

    Args:
        environ: The user's environment (the daemon's by default, at the caller).
        passthrough: ``terminal.env_passthrough``: names kept even when they look secret.
    """
    env = {
        name: value
        for name, value in environ.items()
        if name not in SHELL_MANAGED and not name.startswith("BASH_FUNC_") and not is_terminal_secret(name)
    }
    return with_passthrough(env, environ, passthrough)


def allowed_environment(environ: Mapping[str, str], passthrough: Iterable[str] = ()) -> dict[str, str]:
    """The seeds' allow-list for execute_code: safe system variables of ``environ``, never a secret.

    Args:
        environ: The user's environment.
        passthrough: Names kept even when they look secret (``terminal.env_passthrough``, skills).
    """
    env = {
        name: value
        for name, value in environ.items()
        if (name in EXECUTE_CODE_NAMES or name.startswith(_EXECUTE_CODE_PREFIXES)) and not is_secret_name(name)
    }
    return with_passthrough(env, environ, passthrough)
