"""``hermes-actors cron add|list|status|pause|resume|remove|run-now``: scheduled jobs in the daemon."""

from __future__ import annotations

import argparse
from typing import Any

import attrs

from control.client import ControlClient
from control.paths import DaemonPaths, home_from_env
from messages import control as c

__all__ = ["add_cron_parser", "run_cron_command"]

_JOB_VERBS = {
    "status": "a job's schedule, next run and last result",
    "pause": "stop scheduling a job until it is resumed",
    "resume": "schedule a paused job again",
    "remove": "delete a job",
    "run-now": "run a job at once (not while a run of it is under way, nor while it is paused)",
}


def add_cron_parser(commands: Any, add_json: Any) -> None:
    """The ``cron`` command and its verbs."""
    cron = commands.add_parser("cron", help="scheduled jobs: each run is a fresh session with no one present")
    verbs = cron.add_subparsers(dest="verb", metavar="VERB", required=True)
    add = verbs.add_parser("add", help="schedule a job")
    add.add_argument("--schedule", required=True,
                     help="'0 9 * * 1-5' (cron, in the local time zone), 'every 2h', 'in 30m' or an ISO time")
    add.add_argument("--prompt", required=True, help="what each run is asked")
    add.add_argument("--name", help="a name to list it by")
    add.add_argument("--deliver", metavar="PLATFORM[:CHAT]", help="where its answers go (telegram:CHAT, slack:#channel); else kept")
    add.add_argument("--skills", default="", help="skills its runs load, comma-separated")
    add.add_argument("--model", help="the model its runs use (default: the configured one)")
    add.add_argument("--missed", choices=("skip", "run_once"), default="skip",
                     help="runs missed while the daemon was down: skip them, or run once at start")
    add.add_argument("--time-budget", type=float, metavar="SECONDS", help="what one run may take (default 1800)")
    add.add_argument("--token-budget", type=int, metavar="TOKENS", help="the tokens one run may use (default: no limit)")
    add.add_argument("--approvals", choices=("deny", "approve"),
                     help="how its runs answer dangerous commands (default: approvals.cron_mode)")
    add_json(add)
    add_json(verbs.add_parser("list", help="every job, by next run"))
    for verb, text in _JOB_VERBS.items():
        parser = verbs.add_parser(verb, help=text)
        parser.add_argument("job", metavar="JOB", help="the job's id (cron list shows them)")
        add_json(parser)


def run_cron_command(args: argparse.Namespace) -> int:
    """Send the verb to the running daemon and print its answer; the exit status (a refusal or no
    daemon raises, and the CLI's entry point reports it)."""
    from cli.commands import print_json

    request = _request(args)
    with ControlClient.connect(DaemonPaths(home_from_env())) as client:
        reply: c.CronReply = client.request(attrs.evolve(request, request_id=client.next_id()))
    if args.json:
        print_json({"message": reply.message, "jobs": [attrs.asdict(job) for job in reply.jobs]})
        return 0
    if reply.message:
        print(reply.message)
    if args.verb == "list" and not reply.jobs:
        print("no cron jobs (add one with: hermes-actors cron add --schedule ... --prompt ...)")
    for job in reply.jobs:
        print(_describe(job, full=args.verb == "status"))
    return 0


def _request(args: argparse.Namespace) -> c.CronRequest:
    action = args.verb.replace("-", "_")
    if action == "add":
        skills = [name.strip() for name in args.skills.split(",") if name.strip()]
        return c.CronRequest(
            "", "add", name=args.name, schedule=args.schedule, prompt=args.prompt, deliver=args.deliver,
            skills=skills, model=args.model, missed=args.missed, time_budget=args.time_budget,
            token_budget=args.token_budget, approvals=args.approvals,
        )
    return c.CronRequest("", action, job_id=getattr(args, "job", None))


def _describe(job: c.CronJobStatus, *, full: bool) -> str:
    state = "running" if job.running else job.state
    line = f"{job.id}  {job.name}  [{job.schedule}]  {state}  next: {job.next_run or '-'}"
    if job.last_status:
        line += f"  last: {job.last_status} at {job.last_run}"
    if full:
        line += f"\n  deliver: {job.deliver or '(kept in the store)'}"
        line += f"\n  dangerous commands: {job.approvals or 'as approvals.cron_mode says'}"
        if job.last_error:
            line += f"\n  error: {job.last_error}"
        if job.last_output:
            line += f"\n  last answer:\n{job.last_output}"
    return line
