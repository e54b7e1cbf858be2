"""``hermes-actors pairing list|approve CODE|revoke PLATFORM USER_ID``: who may talk to the bots."""

from __future__ import annotations

import argparse
from typing import Any

import attrs

from control.client import ControlClient
from control.paths import DaemonPaths, home_from_env
from messages import control as c

__all__ = ["add_pairing_parser", "run_pairing_command"]


def add_pairing_parser(commands: Any, add_json: Any) -> None:
    """The ``pairing`` command and its verbs."""
    pairing = commands.add_parser("pairing", help="messaging users let in by a pairing code: list, approve, revoke")
    verbs = pairing.add_subparsers(dest="verb", metavar="VERB", required=True)
    add_json(verbs.add_parser("list", help="codes waiting for approval, and the users let in"))
    approve = verbs.add_parser("approve", help="let in the user who was given CODE")
    approve.add_argument("code", metavar="CODE")
    add_json(approve)
    revoke = verbs.add_parser("revoke", help="stop letting a paired user in")
    revoke.add_argument("platform", metavar="PLATFORM", help="telegram, discord, slack ...")
    revoke.add_argument("user_id", metavar="USER_ID")
    add_json(revoke)


def run_pairing_command(args: argparse.Namespace) -> int:
    """Send the verb to the running daemon and print its answer; the exit status."""
    from cli.commands import print_json

    request = c.PairingRequest(
        "", args.verb, code=getattr(args, "code", None), platform=getattr(args, "platform", None),
        user_id=getattr(args, "user_id", None),
    )
    with ControlClient.connect(DaemonPaths(home_from_env())) as client:
        reply: c.PairingReply = client.request(attrs.evolve(request, request_id=client.next_id()))
    if args.json:
        print_json({
            "message": reply.message, "pending": [attrs.asdict(p) for p in reply.pending],
            "paired": [attrs.asdict(u) for u in reply.paired],
        })
        return 0
    if reply.message:
        print(reply.message)
    if args.verb == "list":
        print("waiting:" if reply.pending else "no pairing codes waiting")
        for code in reply.pending:
            print(f"  {code.code}  {code.platform} user {code.user_id} ({code.user_name}), asked {code.asked_at}")
        print("let in:" if reply.paired else "no paired users")
        for user in reply.paired:
            print(f"  {user.platform} user {user.user_id} ({user.user_name}), since {user.approved_at}")
    return 0
