"""Approving terminal commands: the gate the terminal tool calls before running one.

In order, as in Hermes 0.19.0: a command on the hardline blocklist is refused whatever the
mode or toggle, and so is ``sudo -S`` (a password guessed on standard input) and a command
matching one of the user's ``approvals.deny`` globs (before ``--yolo`` or ``mode: off``, which
the policy consults later, can approve it); a command without a dangerous pattern
(``tools.approval_patterns``) runs; one whose patterns are all allowed for good
(``approvals.allow``) or for this session runs; the rest go to the session's approval policy
(``ToolContext.approve``, see ``tools.approval_policy``), which may ask the user.

A deny glob is matched with :func:`fnmatch.fnmatchcase`, in lower case, against each text the
guard reads the command as (``tools.approval_normalize``) and each command in it: the command
itself, its ``bash -c`` script, its command word unquoted, so ``g"i"t push -f`` and ``cd repo &&
git push -f`` meet ``git push *``. ``session`` answers are remembered per pattern in a ``SessionApprovals``;
``always`` answers are saved in ``config.yaml`` through ``PermanentAllows``.

The terminal tools keep one ``SessionApprovals`` per session id in an ``ApprovalBook`` (owned
by the registered tool object, not by this module); the session may snapshot / restore it for
persistence and ``forget`` it when it ends.
"""

from __future__ import annotations

import fnmatch
import logging
from collections.abc import Iterable

import attrs
import trio

from config.terminal import ApprovalsConfig
from tools.approval_allowlist import AllowListError, PermanentAllows
from tools.approval_patterns import DangerMatch, judge
from tools.context import ApprovalRequest, ToolContext

__all__ = [
    "ApprovalBook",
    "ApprovalOutcome",
    "SessionApprovals",
    "authorize_command",
    "matching_deny_rule",
]

log = logging.getLogger(__name__)

# The guard takes ~15 µs for a usual command and a few ms for a 10 KB script (bench/bench_guard.py);
# above this size it runs in a worker thread, so a long here-document never holds up the event loop.
_INLINE_JUDGE_CHARS = 4096


class SessionApprovals:
    """Pattern keys one session allowed "for this session"."""

    def __init__(self, keys: Iterable[str] = ()) -> None:
        self._keys = set(keys)

    def covers(self, matches: Iterable[DangerMatch]) -> bool:
        """True when every match was allowed for the session."""
        return all(match.key in self._keys for match in matches)

    def remember(self, matches: Iterable[DangerMatch]) -> None:
        """Allow these patterns for the rest of the session."""
        self._keys.update(match.key for match in matches)

    def snapshot(self) -> list[str]:
        """The allowed keys, sorted, for the session's persisted state."""
        return sorted(self._keys)


class ApprovalBook:
    """``SessionApprovals`` by session id, and the daemon-wide permanent allow list.

    Args:
        permanent: the patterns allowed for good (empty and unsaved by default).
        home: the user's home directory: the guard reads ``/home/me/.bashrc`` as ``~/.bashrc``.
    """

    def __init__(self, permanent: PermanentAllows | None = None, home: str | None = None) -> None:
        self._by_session: dict[str, SessionApprovals] = {}
        self.permanent = permanent or PermanentAllows()
        self.home = home

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
    """Whether a command may run, who or what decided, and the words for the model when it may not."""

    allowed: bool
    matches: tuple[DangerMatch, ...] = ()
    decided_by: str = "no dangerous pattern"
    """In words: ``the user``, ``approvals.mode: off``, ``the hardline blocklist`` ..."""
    hardline: str | None = None
    """What a refused hardline command would do."""
    deny_rule: str | None = None
    """The ``approvals.deny`` glob a refused command matched."""
    sudo_stdin: bool = False
    """Refused for running ``sudo -S``."""

    def denial_message(self) -> str:
        """An error text the model can act on."""
        if self.hardline is not None:
            return (
                f"Command refused: it would {self.hardline}. Commands like this are on the hardline blocklist and "
                "never run, whatever the approval settings (--yolo included). Do not retry it in any form."
            )
        if self.sudo_stdin:
            return (
                "Command refused: 'sudo -S' reads a password from standard input, and no password is configured "
                "for the agent, so it could only be guessed. Do not pipe passwords to sudo; ask the user to run "
                "the command in their own terminal."
            )
        if self.deny_rule is not None:
            return (
                f"Command refused: it matches '{self.deny_rule}' in approvals.deny (config.yaml), commands the "
                "user has forbidden whatever the approval settings (--yolo included). Do not retry or rephrase "
                "it; ask the user how to proceed."
            )
        what = "; ".join(match.description for match in self.matches)
        return (
            f"Command not run: it would {what}. It was denied by {self.decided_by}. Do not retry the same command; "
            "ask the user how to proceed or use a non-destructive alternative."
        )


async def authorize_command(
    command: str, ctx: ToolContext, book: ApprovalBook, config: ApprovalsConfig, *, tool: str = "terminal"
) -> ApprovalOutcome:
    """Decide whether ``command`` may run (see the module docstring for the order of the checks).

    A request not decided within ``config.timeout`` counts as denied.
    """
    if len(command) > _INLINE_JUDGE_CHARS:
        verdict = await trio.to_thread.run_sync(judge, command, book.home)
    else:
        verdict = judge(command, book.home)
    if verdict.hardline is not None:
        log.warning("hardline blocklist refused a command (it would %s)", verdict.hardline)
        return ApprovalOutcome(allowed=False, decided_by="the hardline blocklist", hardline=verdict.hardline)
    if verdict.sudo_stdin:
        log.warning("refused a command running sudo -S")
        return ApprovalOutcome(allowed=False, decided_by="the sudo -S guard", sudo_stdin=True)
    rule = matching_deny_rule(verdict.variants, config.deny)
    if rule is not None:
        log.warning("approvals.deny rule %r refused a command", rule)
        return ApprovalOutcome(allowed=False, decided_by=f"approvals.deny ({rule})", deny_rule=rule)
    matches = verdict.dangers
    if not matches:
        return ApprovalOutcome(allowed=True)
    keys = [match.key for match in matches]
    if book.permanent.covers(keys):
        return ApprovalOutcome(allowed=True, matches=matches, decided_by="approvals.allow in config.yaml")
    approvals = book.for_session(ctx.session_id)
    if approvals.covers(matches):
        return ApprovalOutcome(allowed=True, matches=matches, decided_by="an earlier approval for this session")
    request = ApprovalRequest(command=command, description="; ".join(m.description for m in matches), tool=tool)
    answer = None
    with trio.move_on_after(config.timeout):
        answer = await ctx.approve(request)
    if answer is None:
        return ApprovalOutcome(
            allowed=False, matches=matches,
            decided_by=f"nobody: no answer within {config.timeout:g} s (approvals.timeout)",
        )
    if answer.decision == "session":
        approvals.remember(matches)
    elif answer.decision == "always":
        try:
            await book.permanent.add(keys)
        except AllowListError as exc:
            # Still allowed, and for good while the daemon runs; only the saving failed.
            log.warning("could not save an 'always' approval: %s", exc)
    return ApprovalOutcome(allowed=answer.decision != "deny", matches=matches, decided_by=answer.decided_by)


def matching_deny_rule(variants: Iterable[str], globs: Iterable[str]) -> str | None:
    """The first of ``globs`` (``approvals.deny``) that the command, or one command in it, matches; or None.

    Each variant is tried whole and line by line: in the variant with a newline before every command
    start, a line is one command, so ``git push *`` also refuses ``cd repo && git push -f`` (Hermes
    matches whole texts only, where ``true && git push`` would pass the rule).

    Args:
        variants: the lower-cased texts the guard reads the command as (``Verdict.variants``).
        globs: shell-style patterns; compared in lower case, against texts without their outer blanks.
    """
    rules = [(glob.lower(), glob) for glob in globs]
    if not rules:
        return None
    for text in variants:
        candidates = [text, *text.split("\n")] if "\n" in text else [text]
        for candidate in candidates:
            candidate = candidate.strip()
            for glob, original in rules:
                if fnmatch.fnmatchcase(candidate, glob):
                    return original
    return None
