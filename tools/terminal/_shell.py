"""The shell a terminal command runs in, and how its cwd and environment persist.

Each command runs in a fresh ``bash -c``. An EXIT trap writes the shell's final working
directory and exported variables (NUL-separated, so any value survives; with builtins only)
to a pipe the shell inherits (a descriptor numbered high, out of the way of the command's own
redirections); the next command starts from them. The trap also fires when the command itself
calls ``exit``, so ``cd`` and ``export`` persist as they would in one long shell.
"""

from __future__ import annotations

import os

import attrs

from tools.jail.environment import SHELL_MANAGED
from tools.jail.environment import terminal_environment as build_shell_env

__all__ = ["ShellSnapshot", "build_shell_env", "parse_state", "shell_argv"]

# ``"${!X@}"`` lists the variables whose names start with X; covering every possible first
# character enumerates all of them without forking (``env -0`` would cost a fork + exec,
# about a third of a short command's time). ``${!n@a}`` holds the variable's attributes:
# ``x`` marks an exported one.
_NAME_STARTS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_"
_DUMP = (
    "__hermes_dump() { local __n; printf '%s\\0' \"$PWD\"; "
    "for __n in " + " ".join(f'"${{!{c}@}}"' for c in _NAME_STARTS) + "; do "
    "[[ ${!__n@a} == *x* ]] && printf '%s=%s\\0' \"$__n\" \"${!__n}\"; done; }; "
)
# The user's command is $1 and the state pipe's descriptor $2; both are moved into shell
# variables and the positional parameters cleared, so the command sees an empty "$@".
_WRAPPER = (
    _DUMP
    + '__hermes_cmd=$1; __hermes_state=$2; shift $#; '
    + "trap '__hermes_rc=$?; __hermes_dump >&\"$__hermes_state\" 2>/dev/null; exit $__hermes_rc' EXIT; "
    + 'eval "$__hermes_cmd"'
)

@attrs.frozen
class ShellSnapshot:
    """The working directory and exported environment a command left behind."""

    cwd: str
    env: dict[str, str]


def shell_argv(shell: str, command: str, state_fd: int) -> list[str]:
    """The argv that runs ``command`` and writes the shell state to descriptor ``state_fd`` (inherited)."""
    return [shell, "-c", _WRAPPER, "hermes-shell", command, str(state_fd)]


def parse_state(data: bytes) -> ShellSnapshot | None:
    """Read the state the EXIT trap wrote; None when it is missing or cut short."""
    if not data:
        return None
    fields = data.split(b"\0")
    # A complete dump ends with a NUL, leaving one empty field at the end.
    if len(fields) < 2 or fields[-1] != b"":
        return None
    cwd = os.fsdecode(fields[0])
    env: dict[str, str] = {}
    for field in fields[1:-1]:
        name, sep, value = field.partition(b"=")
        if not sep:
            continue
        key = os.fsdecode(name)
        if key in SHELL_MANAGED or key.startswith("BASH_FUNC_"):
            continue
        env[key] = os.fsdecode(value)
    return ShellSnapshot(cwd=cwd, env=env)
