"""What a command's exit status means, for the ``exit_code_meaning`` of a terminal result.

Many commands use a nonzero status to report an answer, not a failure: ``grep`` exits 1 when
nothing matched, ``diff`` when the files differ, ``test`` when the condition is false. A model
that sees a bare ``exit_code: 1`` spends a turn finding that out, so the result says it, as Hermes
Agent does (``tools/terminal_tool.py``, ``_interpret_exit_code``): the command that sets the
status is the last one of a pipeline or chain, its name taken without a leading ``VAR=value``
and without its directory. Beyond Hermes's per-command table, the statuses the shell itself gives
(126, 127, 128+N) and GNU ``timeout``'s 124 are explained for every command.
"""

from __future__ import annotations

import re
import signal

__all__ = ["exit_code_meaning"]

# Shell operators after which another command starts; the last command decides the status.
_COMMAND_SEPARATOR = re.compile(r"\s*(?:\|\||&&|[|;])\s*")

_NO_MATCHES = "No matches found (not an error)"
_FILES_DIFFER = "Files differ (expected, not an error)"
_CONDITION_FALSE = "Condition evaluated to false (expected, not an error)"

# Hermes's table: statuses that are answers, or that name a common cause.
_BY_COMMAND: dict[str, dict[int, str]] = {
    **dict.fromkeys(("grep", "egrep", "fgrep", "rg", "ag", "ack"), {1: _NO_MATCHES}),
    **dict.fromkeys(("diff", "colordiff"), {1: _FILES_DIFFER}),
    **dict.fromkeys(("test", "["), {1: _CONDITION_FALSE}),
    "find": {1: "Some directories could not be read (the results found may still be valid)"},
    "curl": {
        6: "Could not resolve the host",
        7: "Could not connect to the host",
        22: "The server answered with an HTTP error status (such as 404 or 500)",
        28: "The operation timed out",
    },
    "git": {1: "Nonzero status, often not an error (git diff exits 1 when there are differences)"},
}

_SHELL_SIGNAL_BASE = 128


def _last_command_name(command: str) -> str:
    """The name of the command whose status the shell returns: the last one of the line."""
    segments = _COMMAND_SEPARATOR.split(command)
    for word in segments[-1].split():
        if "=" in word and not word.startswith("-"):
            continue  # an assignment before the command: FOO=1 grep ...
        return word.rsplit("/", 1)[-1]
    return ""


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _generic_meaning(exit_code: int) -> str | None:
    """The statuses the shell (or a killer) gives whatever the command was."""
    if exit_code < 0:
        return f"Killed by {_signal_name(-exit_code)}"
    if exit_code == 124:
        return "Timed out: a time limit stopped the command (GNU timeout and this tool give 124)"
    if exit_code == 126:
        return "The command was found but could not be executed (permission denied, or not an executable)"
    if exit_code == 127:
        return "Command not found (check its name and PATH)"
    if _SHELL_SIGNAL_BASE < exit_code <= _SHELL_SIGNAL_BASE + 64:
        return f"Killed by {_signal_name(exit_code - _SHELL_SIGNAL_BASE)}"
    return None


def exit_code_meaning(command: str, exit_code: int) -> str | None:
    """A short explanation of ``exit_code`` for ``command``; None for 0 and for statuses without one.

    >>> exit_code_meaning("cat log | grep -q ERROR", 1)
    'No matches found (not an error)'
    """
    if exit_code == 0:
        return None
    specific = _BY_COMMAND.get(_last_command_name(command), {}).get(exit_code)
    return specific or _generic_meaning(exit_code)
