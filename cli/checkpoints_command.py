"""``hermes-actors checkpoints list|diff|restore SESSION [N]``: the snapshots of a session's working
directory, what changed since one, and the rollback to one (attach's ``/rollback`` prints the same)."""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Mapping
from typing import Any

import attrs

from control.client import ControlClient
from control.errors import EXIT_FAILURE, EXIT_NOT_FOUND, PlatformError, RequestFailed
from control.paths import DaemonPaths, home_from_env
from messages import control as c

__all__ = ["add_checkpoints_parser", "format_checkpoints", "run_checkpoints_command"]

#: Control characters a file may hold: a diff printed to a terminal must not move its cursor or retitle it.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


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

    try:
        with ControlClient.connect(DaemonPaths(home_from_env())) as client:
            request = c.CheckpointRequest(client.next_id(), args.verb, args.session, getattr(args, "number", 1))
            reply: c.CheckpointReply = client.request(request)
    except PlatformError as exc:
        code = exc.code if isinstance(exc, RequestFailed) else "not_running"
        if args.json:
            print_json({"error": {"code": code, "message": str(exc)}})
        print(f"hermes-actors: {exc}", file=sys.stderr)
        return EXIT_NOT_FOUND if code in ("not_found", "invalid") else EXIT_FAILURE
    if args.json:
        print_json(attrs.asdict(reply))
        return 0
    print(format_checkpoints(attrs.asdict(reply), args.verb, f"hermes-actors checkpoints restore {args.session}"))
    return 0


def _line(view: Mapping[str, Any]) -> str:
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(view["taken_at"]))
    count = view["files_changed"]
    changed = f"  ({count} file{'s' if count != 1 else ''})" if count else ""
    return f"  {view['number']:>2}  {view['commit'][:8]}  {when}  {view['reason']}{changed}"


def format_checkpoints(reply: Mapping[str, Any], verb: str, restore_hint: str) -> str:
    """A :class:`~messages.control.CheckpointReply` (as its fields) as text: the list, the diff, or what was
    restored and how to undo it.

    Args:
        reply: the daemon's answer, as a mapping of its fields.
        verb: list, diff or restore.
        restore_hint: the command that restores a checkpoint by its number (``/rollback`` in attach).
    """
    return _CONTROL.sub("\N{REPLACEMENT CHARACTER}", _text(reply, verb, restore_hint))


def _text(reply: Mapping[str, Any], verb: str, restore_hint: str) -> str:
    workdir = reply["workdir"]
    target = reply.get("target")
    if verb == "diff" and target:
        head = f"Changes in {workdir} since checkpoint {target['number']} ({target['commit'][:8]}):"
        cut = "\n  ... (cut: the diff is longer than a reply carries)" if reply.get("truncated") else ""
        return f"{head}\n{reply.get('diff') or '  nothing changed'}{cut}"
    undo = reply.get("undo")
    if verb == "restore" and target and undo:
        return (
            f"Restored {workdir} to checkpoint {target['number']} ({target['commit'][:8]}, {target['reason']}).\n"
            f"Undo with: {restore_hint} {undo['number']}"
        )
    listed = reply.get("checkpoints") or []
    if not listed:
        return f"No checkpoints of {workdir} yet."
    return "\n".join([
        f"Checkpoints of {workdir} (1 is the newest):", *(_line(view) for view in listed),
        f"Restore one with: {restore_hint} N",
    ])
