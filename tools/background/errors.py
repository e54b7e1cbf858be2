"""Errors of the background-process machinery.

The tree::

    BackgroundError (Exception)
    ├── ProcessNotFound (LookupError)        no process with that id in the session's table
    ├── ProcessLimitReached (RuntimeError)   the session already tracks the maximum of running processes
    └── StdinUnavailable (RuntimeError)      the process has exited or its stdin was closed

The process tool turns each into a ``{"error": ...}`` result worded for the model.
"""

from __future__ import annotations

__all__ = ["BackgroundError", "ProcessLimitReached", "ProcessNotFound", "StdinUnavailable"]


class BackgroundError(Exception):
    """Base of every background-process error."""


class ProcessNotFound(BackgroundError, LookupError):
    """No process with the given id is tracked by this session."""

    def __str__(self) -> str:
        # LookupError subclasses quote their argument in some paths; keep it readable.
        return str(self.args[0]) if self.args else ""


class ProcessLimitReached(BackgroundError, RuntimeError):
    """Every slot of the session's process table holds a running process."""


class StdinUnavailable(BackgroundError, RuntimeError):
    """Input cannot be written: the process has exited or its stdin was closed."""
