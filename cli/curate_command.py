"""``hermes-actors skills curate [--dry-run] [--consolidate]``: a pass of the daemon's skills curator now.

The curator runs in the daemon (its model calls need the daemon's providers); this sends the request,
starting a daemon when none runs, and prints what the pass did, or with ``--dry-run`` what it would do.
"""

from __future__ import annotations

import argparse
import sys

import attrs

from cli.autostart import connect_or_start
from cli.commands import print_json
from control.errors import EXIT_FAILURE, PlatformError, RequestFailed
from control.paths import DaemonPaths, home_from_env
from messages import control as c
from tools.learning_log import LearnedChange

__all__ = ["run_curate_command"]


def run_curate_command(args: argparse.Namespace) -> int:
    """Ask the daemon for a curator pass and print its report; the exit status (1 when the pass failed)."""
    consolidate = True if args.consolidate else None
    try:
        with connect_or_start(DaemonPaths(home_from_env())) as client:
            reply: c.CurateReply = client.request(c.CurateRequest(client.next_id(), args.dry_run, consolidate))
    except PlatformError as exc:
        code = exc.code if isinstance(exc, RequestFailed) else "not_running"
        if args.json:
            print_json({"error": {"code": code, "message": str(exc)}})
        print(f"hermes-actors: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    if args.json:
        print_json(attrs.asdict(reply))
        return EXIT_FAILURE if reply.error else 0
    would = "would be: " if reply.dry_run else ""
    for change in reply.changes:
        print(f"  {would}{LearnedChange('', '', 'skill', change.action, change.skill, change.reason).describe()}")
    print(reply.summary)
    if reply.error:
        print(f"hermes-actors: the pass failed and what it changed was undone: {reply.error}", file=sys.stderr)
        return EXIT_FAILURE
    return 0
