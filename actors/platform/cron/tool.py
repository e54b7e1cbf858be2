"""``cronjob``: the model schedules, lists and changes jobs of the ``cron`` actor.

Changing the schedule is a side effect that outlives the session, so every action but ``list``
asks for approval as a dangerous command does (in a session that cannot ask, ``approvals.mode`` and
``approvals.cron_mode`` decide; a request nobody answers in time is denied). The tool is never
callable from ``execute_code`` (seed 001's tool audit), and cron runs themselves are not offered it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


from actors import ActorError, ActorHandle
from actors.platform.cron.actor import AddJob, JobSpec, JobView, ListJobs, PauseJob, RemoveJob, ResumeJob, RunNow
from actors.platform.cron.jobs import CronJob, MissedPolicy
from actors.platform.outbound import Destination, UnknownDestination
from tools.context import ToolContext
from tools.errors import ToolError
from tools.registry import ToolRegistry
from tools.results import ToolResult
from tools.side_effects import approve_side_effect

__all__ = ["TOOL_NAME", "TOOLSET", "register_cronjob"]

TOOL_NAME = "cronjob"
TOOLSET = "cronjob"
_CHANGES = {"pause": PauseJob, "resume": ResumeJob, "remove": RemoveJob, "run_now": RunNow}

_SCHEMA: dict[str, Any] = {
    "name": TOOL_NAME,
    "description": (
        "Manage scheduled jobs: each run is a fresh session with no user present that gets `prompt` and "
        "delivers its final answer to `deliver` (a messaging platform, e.g. 'telegram:CHAT_ID') or keeps it. "
        "Use for work that must happen later or repeatedly. Actions: create (schedule, prompt, optional name, "
        "deliver, missed='skip'|'run_once'), list, pause / resume / remove / run_now (job_id). A schedule is a "
        "cron expression in the user's time zone ('0 9 * * 1-5'), an interval ('every 2h'), a delay ('in 30m') "
        "or an ISO time. Every action but list needs the user's approval."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": ["create", "list", "pause", "resume", "remove", "run_now"]},
            "schedule": {"type": "string"},
            "prompt": {"type": "string", "description": "Self-contained instructions: the run has no other context."},
            "name": {"type": "string"},
            "deliver": {"type": "string"},
            "missed": {"type": "string", "enum": ["skip", "run_once"]},
            "job_id": {"type": "string"},
        },
        "required": ["action"],
    },
}


def register_cronjob(registry: ToolRegistry, cron: Callable[[], ActorHandle[Any]], approval_timeout: float) -> None:
    """Register ``cronjob`` (toolset ``cronjob``) over the ``cron`` actor that ``cron()`` looks up."""

    async def handler(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return await _run(args, ctx, cron, approval_timeout)

    registry.register(TOOL_NAME, TOOLSET, _SCHEMA, handler, emoji="⏰")


async def _run(
    args: dict[str, Any], ctx: ToolContext, cron: Callable[[], ActorHandle[Any]], approval_timeout: float
) -> ToolResult:
    action = args.get("action")
    try:
        actor = cron()
    except ActorError as exc:
        raise ToolError("Scheduled jobs are not available in this daemon.") from exc
    if action == "list":
        views: list[JobView] = await actor.ask(ListJobs())
        return ToolResult({"jobs": [_summary(view.job, view.running) for view in views]})
    if action == "create":
        message: Any = AddJob(_spec(args))
        what = f"schedule a job [{args['schedule']}]: {args['prompt']}"
    elif action in _CHANGES:
        job_id = args.get("job_id")
        if not isinstance(job_id, str) or not job_id:
            raise ToolError(f"'{action}' needs 'job_id' (the id 'list' shows).")
        message = _CHANGES[action](job_id)
        what = f"{action.replace('_', ' ')} the scheduled job {job_id}"
    else:
        raise ToolError("'action' must be one of: create, list, pause, resume, remove, run_now.")
    await approve_side_effect(
        ctx, tool=TOOL_NAME, what=what, description="change the scheduled jobs", timeout=approval_timeout,
        refused="Not done: changing the scheduled jobs",
    )
    try:
        job: CronJob = await actor.ask(message)
    except (LookupError, ValueError) as exc:
        raise ToolError(f"{exc}") from exc
    return ToolResult({"ok": True, "action": action, "job": _summary(job, action == "run_now")})


def _spec(args: dict[str, Any]) -> JobSpec:
    schedule, prompt = args.get("schedule"), args.get("prompt")
    if not isinstance(schedule, str) or not schedule.strip() or not isinstance(prompt, str) or not prompt.strip():
        raise ToolError("'create' needs 'schedule' and 'prompt' (non-empty strings).")
    deliver = args.get("deliver") or None
    if deliver is not None:
        try:
            Destination.parse(str(deliver))
        except UnknownDestination as exc:
            raise ToolError(f"'deliver': {exc}") from exc
    try:
        missed = MissedPolicy(args.get("missed") or "skip")
    except ValueError as exc:
        raise ToolError("'missed' must be 'skip' or 'run_once'.") from exc
    name = args.get("name")
    return JobSpec(schedule, prompt, name=name if isinstance(name, str) and name else None, deliver=deliver, missed=missed)


def _summary(job: CronJob, running: bool) -> dict[str, Any]:
    return {
        "id": job.id, "name": job.name, "schedule": job.schedule.text, "state": job.state.value, "running": running,
        "next_run": job.next_run.isoformat() if job.next_run else None, "deliver": job.deliver,
        "last_status": job.last_status, "last_error": job.last_error,
    }
