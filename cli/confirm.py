"""Asking a person before a command destroys something (``sessions delete``, ``skills delete``).

Without a terminal nobody can answer, so such a command needs ``--yes`` instead of reading a
line of a script as consent.
"""

from __future__ import annotations

import sys

__all__ = ["can_ask", "confirmed"]


def can_ask() -> bool:
    """Whether a person is there to answer: standard input is a terminal."""
    return sys.stdin.isatty()


def confirmed(question: str) -> bool:
    """Ask ``question`` with ``[y/N]``; True only for ``y`` or ``yes`` (end of input is a no)."""
    try:
        answer = input(f"{question} [y/N] ")
    except EOFError:
        return False
    return answer.strip().lower() in ("y", "yes")
