"""The ``terminal`` tool: foreground commands with a persistent shell state, background starts.

Public surface:

- ``register_terminal_tools(registry, config, approvals_config)`` registers ``terminal`` and
  ``process`` and returns the ``TerminalTools`` object holding the per-session approvals.
- ``ForegroundRun`` / ``run_foreground`` run one command through the session's jail, stopping all it started
  (usable directly by a session that wants the partial output of a cancelled command).
- ``exit_code_meaning(command, exit_code)`` explains a nonzero status that is an answer (grep's 1).
- ``build_shell_env`` makes a session's starting shell environment without credentials
  (``tools.jail.terminal_environment``: Hermes's named blocklist, then the secret-name rule).
"""

from __future__ import annotations

from tools.terminal._foreground import (
    EXIT_INTERRUPTED,
    EXIT_TIMEOUT,
    ForegroundResult,
    ForegroundRun,
    run_foreground,
)
from tools.jail import HeadTailBuffer
from tools.terminal._shell import ShellSnapshot, build_shell_env, parse_state, shell_argv
from tools.terminal._exit_codes import exit_code_meaning
from tools.terminal._schema import TERMINAL_SCHEMA
from tools.terminal._tool import TerminalTools, register_terminal_tools
from tools.terminal.errors import RunAlreadyStarted, TerminalError

__all__ = [
    "EXIT_INTERRUPTED",
    "EXIT_TIMEOUT",
    "TERMINAL_SCHEMA",
    "ForegroundResult",
    "ForegroundRun",
    "HeadTailBuffer",
    "RunAlreadyStarted",
    "ShellSnapshot",
    "TerminalError",
    "TerminalTools",
    "build_shell_env",
    "exit_code_meaning",
    "parse_state",
    "register_terminal_tools",
    "run_foreground",
    "shell_argv",
]
