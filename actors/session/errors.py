"""Errors the session actor answers with (its libraries' own are in ``conversation.errors``).

    SessionBusy (RuntimeError)               the session cannot take this input now
    NoTurnRunning (RuntimeError)             an interrupt or a steer with no turn to reach
"""

from __future__ import annotations


class SessionBusy(RuntimeError):
    """The session cannot take this input now (queue full, shutting down)."""


class NoTurnRunning(RuntimeError):
    """An interrupt or a steer reached a session that runs no turn: nothing was done."""
