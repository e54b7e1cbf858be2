"""The interactive client's slash commands: their names, help, and parsing with suggestions."""

from __future__ import annotations

import difflib
import re

__all__ = ["COMMANDS", "SlashCommandError", "parse_command"]

#: Every slash command and what it does (``/help`` prints this).
COMMANDS: dict[str, str] = {
    "/help": "this list",
    "/detach": "leave; the session goes on (Ctrl-D too)",
    "/stop": "interrupt the running turn (Ctrl-C too)",
    "/steer TEXT": "add TEXT to the next tool result of the running turn",
    "/compress [TOPIC]": "compress the conversation (focused on TOPIC)",
    "/reset-tools": "rebuild the session's frozen tool list (new MCP tools, changed toolsets); not while a turn runs",
    "/reload-mcp [now]": "restart the MCP servers (config.yaml read again) and rebuild the tool list; asks first",
    "/usage": "tokens, cost, cache hits and context used so far",
    "/show N": "the full output of tool [N]",
    "/new": "start a new session with the same provider and attach to it",
    "/yolo [on|off]": "approve every dangerous command of this session unasked (the hardline list is still refused)",
    "/rollback [N | diff N]": "the checkpoints of the session's directory; N restores checkpoint N (undoable), "
    "diff N shows what changed since it",
}
_NAMES = tuple(key.split(" ", 1)[0] for key in COMMANDS)
_NEEDS_ARGUMENT = {"/steer": "TEXT", "/show": "N (a tool's number)"}
_ROLLBACK = re.compile(r"(?:diff\s+)?\d+|")


class SlashCommandError(ValueError):
    """A slash command that does not exist or lacks its argument; the message says what to type."""


def parse_command(text: str) -> tuple[str, str]:
    """``/word rest`` as (word, rest), checked.

    Raises:
        SlashCommandError: an unknown command (with the closest one as a suggestion), or a missing argument.
    """
    word, _, rest = text.strip().partition(" ")
    rest = rest.strip()
    if word not in _NAMES:
        close = difflib.get_close_matches(word, _NAMES, n=1, cutoff=0.5)
        hint = f"did you mean {close[0]}? " if close else ""
        raise SlashCommandError(f"unknown command {word}; {hint}(/help lists them)")
    if word in _NEEDS_ARGUMENT and not rest:
        raise SlashCommandError(f"{word} needs {_NEEDS_ARGUMENT[word]}")
    if word == "/show" and not rest.isdigit():
        raise SlashCommandError(f"/show needs a tool's number, not {rest!r}")
    if word == "/rollback" and not _ROLLBACK.fullmatch(rest):
        raise SlashCommandError(f"/rollback takes nothing (the list), N (restore) or diff N, not {rest!r}")
    return word, rest
