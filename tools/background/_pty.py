"""Wrapping a background command so that it runs on a pseudo-terminal (the terminal tool's ``pty=true``).

The wrapper is :mod:`tools.background.pty_relay`, run by our own interpreter as the process the jail
starts: the jail, its mounts and its environment filter apply to it like to any tool process, and the
pty it opens is the jail's own. Output still arrives on a plain pipe, so the ANSI cleaning and the
redaction of the usual path apply unchanged.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["PTY_NEEDS_PIPE_NOTE", "pty_argv", "pty_breaks_command"]

# Read once: the relay runs from its text (``python -c``), so it needs no import path in the jail.
_RELAY_SOURCE = Path(__file__).with_name("pty_relay.py").read_text(encoding="utf-8")

PTY_NEEDS_PIPE_NOTE = (
    "pty was not used: this command reads a token from piped stdin until end of file "
    "(gh auth login --with-token), which a terminal never gives it. In the background, "
    "write the token and then use process(action='close') to end its input."
)


def pty_argv(argv: Sequence[str], grace_seconds: float) -> list[str]:
    """``argv`` run on a pseudo-terminal; ``grace_seconds`` between the SIGTERM and SIGKILL it passes on."""
    # -I: the user's PYTHONPATH and site-packages must not change how the relay itself runs.
    return [sys.executable, "-I", "-c", _RELAY_SOURCE, repr(float(grace_seconds)), *argv]


def pty_breaks_command(command: str) -> bool:
    """Whether ``command`` needs a pipe on stdin to work (Hermes Agent runs it without a pty too)."""
    normalized = " ".join(command.lower().split())
    return normalized.startswith("gh auth login") and "--with-token" in normalized
