"""Dangerous terminal commands: detection, and asking the user before they run.

Detection follows the seeds' destructive-command guard: ``rm``, ``rmdir``, ``cp``,
``install``, ``mv``, ``sed -i``, ``truncate``, ``dd``, ``shred``, ``git reset|clean|checkout``
at the start of a command or after a shell separator, and ``>`` redirects that overwrite a
file. A recursive delete of ``/`` or the home directory is *always-ask*: an earlier "allow
for this session" never covers it.

Session approvals: an answer of ``"session"`` is remembered per pattern in a
``SessionApprovals`` object. The terminal tools keep one per session id in an
``ApprovalBook`` (owned by the registered tool object, not by this module), and the
session may snapshot / restore it for persistence and ``forget`` it when it ends.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable

import attrs
import trio

from config.terminal import ApprovalsConfig
from tools.context import ApprovalRequest, ToolContext

__all__ = [
    "ALWAYS_ASK_KEY",
    "ApprovalBook",
    "ApprovalOutcome",
    "DangerMatch",
    "SessionApprovals",
    "authorize_command",
    "find_dangers",
]

ALWAYS_ASK_KEY = "recursive_delete_root_or_home"

# A command word counts only in command position: at the start, after a separator or an
# opening quote/paren/brace (``&&``, ``;``, ``|``, backtick, ``$(``, ``bash -c "...``), after a
# wrapper that runs its arguments (sudo, xargs, find -exec ...), after ``VAR=value``
# assignments, and possibly as a path (``/bin/rm``). Matching every word after a space, as
# the seeds' regex does, would ask about ``pip install`` or ``echo rm``.
_START = (
    r"(?:^|[;&|`(\n\"'{]|\b(?:sudo|doas|xargs|nohup|time|exec|command|env)\s|-exec(?:dir)?\s|-ok\s)"
    r"\s*(?:\w+=\S*\s+)*(?:[^\s;&|`'\"]*/)?"
)
_COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("rm", r"rm", "delete files (rm)"),
    ("rmdir", r"rmdir", "remove directories (rmdir)"),
    ("cp", r"cp", "copy over files (cp)"),
    ("install", r"install", "install files (install)"),
    ("mv", r"mv", "move or rename files (mv)"),
    ("sed_in_place", r"sed\s+(?:[^|;&]*\s)?-[a-zA-Z]*i[a-zA-Z]*", "edit files in place (sed -i)"),
    ("truncate", r"truncate", "truncate files (truncate)"),
    ("dd", r"dd", "raw copy to files or devices (dd)"),
    ("shred", r"shred", "destroy file contents (shred)"),
    ("git_reset", r"git\s+reset", "discard git changes (git reset)"),
    ("git_clean", r"git\s+clean", "delete untracked files (git clean)"),
    ("git_checkout", r"git\s+checkout", "overwrite working-tree files (git checkout)"),
)
# The word must end there: ``rm`` but not ``rmate``.
_END = r"(?=[\s;&|)`'\"]|$)"
# One alternation scanned once (the command-position prefix is the costly part); longer
# words first so ``rmdir`` is not taken for ``rm``.
_COMMAND_WORD = re.compile(
    _START
    + "(?:"
    + "|".join(f"(?P<{key}>{pattern}){_END}" for key, pattern, _ in sorted(_COMMANDS, key=lambda c: -len(c[1])))
    + ")"
)
_DESCRIPTIONS = {key: text for key, _, text in _COMMANDS}

# ``>`` or ``>|`` (optionally ``&>``) that is not ``>>``, not an fd duplication ``>&``, and
# not an arrow such as ``->`` or ``=>``.
_REDIRECT = re.compile(r"(?<![>=\-<])&?>\|?(?![>&])\s*(?P<target>[^\s;&|<>()]+)")
_HARMLESS_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"})

_RM_CALL = re.compile(_START + r"rm\s+(?P<args>[^;&|`)\n]*)")
_ROOT_OR_HOME = frozenset({"/", "/*", "/.", "~", "~/", "~/*", "~/.", "$HOME", "$HOME/", "$HOME/*", "${HOME}", "${HOME}/", "${HOME}/*"})


@attrs.frozen
class DangerMatch:
    """One dangerous pattern found in a command."""

    key: str
    """Stable name of the pattern (what a session approval remembers)."""
    description: str
    always_ask: bool = False


def find_dangers(command: str) -> list[DangerMatch]:
    """Every dangerous pattern in ``command`` (empty when it looks safe)."""
    if not command or not command.strip():
        return []
    keys = {match.lastgroup for match in _COMMAND_WORD.finditer(command)}
    found = [DangerMatch(key, text) for key, text in _DESCRIPTIONS.items() if key in keys]
    if any(match.group("target") not in _HARMLESS_TARGETS for match in _REDIRECT.finditer(command)):
        found.append(DangerMatch("overwrite_redirect", "overwrite a file with a > redirect"))
    if _deletes_root_or_home(command):
        found.append(
            DangerMatch(ALWAYS_ASK_KEY, "recursively delete the root or home directory", always_ask=True)
        )
    return found


def _deletes_root_or_home(command: str) -> bool:
    for call in _RM_CALL.finditer(command):
        try:
            args = shlex.split(call.group("args"), posix=True)
        except ValueError:
            args = call.group("args").split()
        recursive = any(
            arg in ("--recursive", "-r", "-R")
            or (arg.startswith("-") and not arg.startswith("--") and ("r" in arg or "R" in arg))
            for arg in args
        )
        targets = (arg.strip("'\"") for arg in args if not arg.startswith("-"))
        if recursive and any(target in _ROOT_OR_HOME for target in targets):
            return True
    return False


class SessionApprovals:
    """Pattern keys one session allowed "for this session"; always-ask patterns are never kept."""

    def __init__(self, keys: Iterable[str] = ()) -> None:
        self._keys = {key for key in keys if key != ALWAYS_ASK_KEY}

    def covers(self, matches: list[DangerMatch]) -> bool:
        """True when every match was allowed for the session and none is always-ask."""
        return all(not match.always_ask and match.key in self._keys for match in matches)

    def remember(self, matches: list[DangerMatch]) -> None:
        """Allow these patterns for the rest of the session (always-ask ones excepted)."""
        self._keys.update(match.key for match in matches if not match.always_ask)

    def snapshot(self) -> list[str]:
        """The allowed keys, sorted, for the session's persisted state."""
        return sorted(self._keys)


class ApprovalBook:
    """``SessionApprovals`` by session id, for tools shared by every session of the daemon."""

    def __init__(self) -> None:
        self._by_session: dict[str, SessionApprovals] = {}

    def for_session(self, session_id: str) -> SessionApprovals:
        """The approvals of ``session_id`` (created empty on first use)."""
        approvals = self._by_session.get(session_id)
        if approvals is None:
            approvals = self._by_session[session_id] = SessionApprovals()
        return approvals

    def restore(self, session_id: str, keys: Iterable[str]) -> None:
        """Reinstate approvals persisted with a resumed session."""
        self._by_session[session_id] = SessionApprovals(keys)

    def forget(self, session_id: str) -> None:
        """Drop a session's approvals (it ended)."""
        self._by_session.pop(session_id, None)


@attrs.frozen
class ApprovalOutcome:
    """Whether a command may run, and the words for the model when it may not."""

    allowed: bool
    matches: tuple[DangerMatch, ...] = ()
    decided_by: str = "safe"
    """``safe``, ``session`` (earlier approval), ``once``, ``session_granted``, ``deny``, ``timeout`` or ``unattended``."""

    def denial_message(self, command: str) -> str:
        """An error text the model can act on."""
        what = "; ".join(match.description for match in self.matches)
        if self.decided_by == "timeout":
            why = "No one answered the approval request in time, so it was denied"
        elif self.decided_by == "unattended":
            why = "Nobody can approve dangerous commands in this context (non-interactive), so it was denied"
        else:
            why = "The user denied it"
        return (
            f"Command not run: it would {what}. {why}. Do not retry the same command; "
            "ask the user how to proceed or use a non-destructive alternative."
        )


async def authorize_command(
    command: str, ctx: ToolContext, approvals: SessionApprovals, config: ApprovalsConfig, *, tool: str = "terminal"
) -> ApprovalOutcome:
    """Decide whether ``command`` may run, asking the user through ``ctx`` when it is dangerous.

    A request nobody answers within ``config.timeout_seconds`` counts as denied.
    """
    matches = find_dangers(command)
    if not matches:
        return ApprovalOutcome(allowed=True)
    found = tuple(matches)
    if approvals.covers(matches):
        return ApprovalOutcome(allowed=True, matches=found, decided_by="session")
    if not ctx.interactive:
        return ApprovalOutcome(allowed=False, matches=found, decided_by="unattended")
    always = any(match.always_ask for match in matches)
    description = "; ".join(match.description for match in matches)
    if always:
        description += " (always asks, even when allowed for the session)"
    request = ApprovalRequest(command=command, description=description, tool=tool)
    decision = None
    with trio.move_on_after(config.timeout_seconds):
        decision = await ctx.approve(request)
    if decision is None:
        return ApprovalOutcome(allowed=False, matches=found, decided_by="timeout")
    if decision == "session":
        approvals.remember(matches)
        return ApprovalOutcome(allowed=True, matches=found, decided_by="session_granted")
    if decision == "once":
        return ApprovalOutcome(allowed=True, matches=found, decided_by="once")
    return ApprovalOutcome(allowed=False, matches=found, decided_by="deny")
