"""Errors of the terminal package.

The tree::

    TerminalError (Exception)
    └── RunAlreadyStarted (RuntimeError)   a ForegroundRun was started a second time

Everything a command can do wrong (not found, bad cwd, timeout, non-zero exit) is a
result for the model, not an exception: these are programming errors of callers.
"""

from __future__ import annotations

__all__ = ["RunAlreadyStarted", "TerminalError"]


class TerminalError(Exception):
    """Base of the terminal package's errors."""


class RunAlreadyStarted(TerminalError, RuntimeError):
    """``ForegroundRun.run()`` is single-use."""
