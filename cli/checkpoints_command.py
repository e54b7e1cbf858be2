"""``hermes-actors checkpoints list|diff|restore SESSION [N]``: the snapshots of a session's working
directory, what changed since one, and the rollback to one (attach's ``/rollback`` prints the same)."""

from __future__ import annotations

import argparse
import time
from typing import Any

import attrs

from control.client import ControlClient
from control.paths import DaemonPaths, home_from_env
from messages import control as c

__all__ = ["add_checkpoints_parser", "format_checkpoints", "run_checkpoints_command"]


def add_checkpoints_parser(commands: Any, add_json: Any) -> None:
    """The ``checkpoints`` command and its verbs."""
    checkpoints = commands.add_parser(
        "checkpoints", help="snapshots of a session's working directory (checkpoints.enabled): list, diff, restore",
    )
    verbs = checkpoints.add_subparsers(dest="verb", metavar="VERB", required=True)
    for verb, text in (
        ("list", "the checkpoints, 1 the newest"),
        ("diff", "what changed since checkpoint N (default 1)"),
        ("restore", "set the directory back to checkpoint N (default 1); undo with restore 1"),
    ):
        parser = verbs.add_parser(verb, help=text)
        parser.add_argument("session", metavar="SESSION", help="session id or title")
        if verb != "list":
            parser.add_argument("number", metavar="N", type=int, nargs="?", default=1)
        add_json(parser)


def run_checkpoints_command(args: argparse.Namespace) -> int:
    """Send the verb to the running daemon and print its answer; the exit status."""
    from cli.commands import print_json

    with ControlClient.connect(DaemonPaths(home_from_env())) as client:
        request = c.CheckpointRequest(client.next_id(), args.verb, args.session, getattr(args, "number", 1))
        reply: c.CheckpointReply = client.request(request)
    if args.json:
        print_json(attrs.asdict(reply))
        return 0
    print(format_checkpoints(reply, args.verb, f"hermes-actors checkpoints restore {args.session}"))
    return 0


def _line(view: c.CheckpointView) -> str:
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(view.taken_at))
    changed = f"  ({view.files_changed} file{'s' if view.files_changed != 1 else ''})" if view.files_changed else ""
    return f"  {view.number:>2}  {view.commit[:8]}  {when}  {view.reason}{changed}"


def format_checkpoints(reply: c.CheckpointReply, verb: str, restore_hint: str) -> str:
    """The reply as text: the list, the diff, or what was restored and how to undo it.

    Args:
        reply: the daemon's answer.
        verb: list, diff or restore.
        restore_hint: the command that restores a checkpoint by its number (``/rollback`` in attach).
    """
    if verb == "diff":
        assert reply.restored is not None  # the daemon names the checkpoint a diff is against
        head = f"Changes in {reply.workdir} since checkpoint {reply.restored.number} ({reply.restored.commit[:8]}):"
        body = reply.diff or "  nothing changed"
        cut = "\n  ... (cut: the diff is longer than a reply carries)" if reply.truncated else ""
        return f"{head}\n{body}{cut}"
    if verb == "restore":
        assert reply.restored is not None and reply.undo is not None  # the daemon says both after a restore
        return (
            f"Restored {reply.workdir} to checkpoint {reply.restored.number} "
            f"({reply.restored.commit[:8]}, {reply.restored.reason}).\n"
            f"Undo with: {restore_hint} {reply.undo.number}"
        )
    if not reply.checkpoints:
        return f"No checkpoints of {reply.workdir} yet."
    lines = [f"Checkpoints of {reply.workdir} (1 is the newest):", *(_line(view) for view in reply.checkpoints)]
    lines.append(f"Restore one with: {restore_hint} N")
    return "\n".join(lines)
