"""The shell a terminal command runs in, and how its cwd and environment persist.

Each command runs in a fresh ``bash -c``. An EXIT trap writes the shell's final working
directory (NUL-terminated) and bash's own listing of its exported variables (``export -p``,
read by :mod:`tools.terminal._exports`), then a NUL that says the listing is whole, to a pipe
the shell inherits (a descriptor numbered high, out of the way of the command's own
redirections); the next command starts from them. Builtins only: no fork. The trap also fires
when the command itself calls ``exit``, so ``cd`` and ``export`` persist as they would in one
long shell.
"""

from __future__ import annotations

import os
import sys

import attrs

from tools.jail.environment import SHELL_MANAGED
from tools.jail.environment import terminal_environment as build_shell_env
from tools.terminal._exports import parse_exports

__all__ = ["ShellSnapshot", "build_shell_env", "parse_state", "shell_argv"]

# The user's command is $1 and the state pipe's descriptor $2; both are moved into shell
# variables and the positional parameters cleared, so the command sees an empty "$@".
# ``builtin`` keeps a function the command defines named ``printf`` or ``export`` out of the
# dump; the closing NUL is written only when the listing succeeded.
_WRAPPER = (
    '__hermes_cmd=$1; __hermes_state=$2; shift $#; '
    "trap '__hermes_rc=$?; { builtin printf \"%s\\0\" \"$PWD\"; builtin export -p && builtin printf \"\\0\"; } "
    '>&"$__hermes_state" 2>/dev/null; exit $__hermes_rc\' EXIT; '
    'eval "$__hermes_cmd"'
)
_SHELL_MANAGED = frozenset(os.fsencode(name) for name in SHELL_MANAGED)
_FS_ENCODING = sys.getfilesystemencoding()


@attrs.frozen
class ShellSnapshot:
    """The working directory and exported environment a command left behind."""

    cwd: str
    env: dict[str, str]


def shell_argv(shell: str, command: str, state_fd: int) -> list[str]:
    """The argv that runs ``command`` and writes the shell state to descriptor ``state_fd`` (inherited)."""
    return [shell, "-c", _WRAPPER, "hermes-shell", command, str(state_fd)]


def parse_state(data: bytes) -> ShellSnapshot | None:
    """Read the state the EXIT trap wrote; None when it is missing, cut short or not what bash writes."""
    cwd, found, listing = data.partition(b"\0")
    # A whole dump starts with an absolute path and ends with the NUL after the listing; no value can hold
    # another NUL. Anything else has been written to the pipe by the command itself.
    if not found or not cwd.startswith(b"/") or not listing.endswith(b"\0") or b"\0" in listing[:-1]:
        return None
    exported = parse_exports(listing[:-1])
    if exported is None:
        return None
    # What os.fsdecode does, without its checks per call (a few dozen variables per command).
    env = {
        name.decode(_FS_ENCODING, "surrogateescape"): value.decode(_FS_ENCODING, "surrogateescape")
        for name, value in exported.items()
        if name not in _SHELL_MANAGED
    }
    return ShellSnapshot(cwd=os.fsdecode(cwd), env=env)
