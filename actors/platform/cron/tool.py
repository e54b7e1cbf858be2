"""``cronjob``: the model schedules, lists, changes and runs jobs of the ``cron`` actor, in Hermes's shapes.

Hermes 0.19.0's parameters and actions (create, list, update, pause, resume, remove, run), its results
(``success``, ``job_id``, the job as ``_format_job`` shows it). Changing the schedule is a side effect that
outlives the session, so every action but ``list`` asks for approval as a dangerous command does (in a
session that cannot ask, ``approvals.mode`` and ``approvals.cron_mode`` decide; a request nobody answers in
time is denied). The tool is never callable from ``execute_code``
(docs/DECISIONS.md#d-script-tool-audit), nor offered to cron runs or subagents.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, Final

import trio

from actors import ActorError, ActorHandle
from actors.platform.cron.actor import (
    AddJob, CronMessage, JobSpec, ListJobs, PauseJob, RemoveJob, ResumeJob, RunNow, UpdateJob,
)
from actors.platform.cron.jobs import CronJob
from actors.platform.cron.schedule import ScheduleKind
from actors.platform.cron.script import CronScripts, ScriptRefused
from actors.platform.outbound import Destination, UnknownDestination
from messages.request import Request
from tools.context import ToolContext
from tools.errors import ToolError, UnknownToolsetError
from tools.registry import ToolRegistry
from tools.results import ToolResult
from tools.side_effects import approve_side_effect
from tools.toolsets import ToolsetCatalog

__all__ = ["TOOL_NAME", "TOOLSET", "register_cronjob"]

TOOL_NAME = "cronjob"
TOOLSET = "cronjob"
ACTIONS: Final = ("create", "list", "update", "pause", "resume", "remove", "run")
#: Hermes's other names for run.
_RUN_ALIASES: Final = frozenset({"run_now", "trigger"})
_CHANGES = {"pause": PauseJob, "resume": ResumeJob, "remove": RemoveJob, "run": RunNow}
_PROMPT_PREVIEW_CHARS: Final = 100

_STRINGS = {"type": "array", "items": {"type": "string"}}
_SCHEMA: dict[str, Any] = {
    "name": TOOL_NAME,
    "description": (
        "Manage scheduled jobs. Actions: create (schedule and prompt, or skills), list, and, with the "
        "job_id that list shows, update, pause, resume, remove and run (start a run now). To stop a job "
        "the user no longer wants, list first and remove it by its job_id: never guess ids.\n\n"
        "Each run is a fresh session with no one to ask and none of this chat's context, so the prompt "
        "must be self-contained; its final answer is delivered to `deliver`, so put what the user should "
        "read there. Skills given are loaded, in order, before the prompt is followed; on update, "
        "skills=[] clears them (as [] or '' clears the other lists and paths). Runs never schedule "
        "more jobs. Every action but list needs the user's approval."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "action": {"type": "string", "description": f"One of: {', '.join(ACTIONS)}. create needs schedule and prompt."},
            "job_id": {"type": "string", "description": "For update, pause, resume, remove and run: an id from list."},
            "prompt": {"type": "string", "description": "The run's whole, self-contained instructions (with skills: the task)."},
            "schedule": {
                "type": "string",
                "description": (
                    "For create and update, in the user's time zone: a cron expression ('0 9 * * *'), an "
                    "interval ('every 2h'), a delay ('30m', 'in 30m') or an ISO time ('2026-06-01T09:00:00', once)."
                ),
            },
            "name": {"type": "string", "description": "A name for people."},
            "repeat": {
                "type": "integer",
                "description": "How many runs before the job is done; omit for once (a one-shot) or forever (recurring).",
            },
            "deliver": {
                "type": "string",
                "description": "Where the answer goes: 'telegram', 'telegram:CHAT_ID', 'discord:CHANNEL_ID'; omit to keep it in the job's record.",
            },
            "skills": {**_STRINGS, "description": "Skills the run loads, in order, before following the prompt."},
            "model": {
                "type": "object",
                "description": "The model runs use (default: the configured one).",
                "properties": {
                    "model": {"type": "string", "description": "The model's name."},
                    "provider": {"type": "string", "description": "Its provider (default: the configured one)."},
                },
                "required": ["model"],
            },
            "script": {
                "type": "string",
                "description": (
                    "A script under HERMES_ACTORS_HOME/scripts (a path relative to it) run, jailed, before "
                    "each run: its output becomes the run's context, and no output means nothing to report "
                    "(no run). .sh/.bash run with bash, others with Python."
                ),
            },
            "no_agent": {
                "type": "boolean",
                "default": False,
                "description": (
                    "true: the script is the whole job, no model: its output is delivered as it is, an empty "
                    "output sends nothing, a failure sends an alert. Needs script."
                ),
            },
            "context_from": {**_STRINGS, "description": "Jobs (ids from list) whose latest answer each run is given first."},
            "enabled_toolsets": {**_STRINGS, "description": "Only these toolsets for the runs (e.g. ['web', 'file'])."},
            "workdir": {"type": "string", "description": "An existing absolute directory the runs and the script work in."},
        },
        "required": ["action"],
    },
}


def register_cronjob(
    registry: ToolRegistry, cron: Callable[[], ActorHandle[CronMessage]], approval_timeout: float,
    scripts: CronScripts | None = None,
) -> None:
    """Register ``cronjob`` (toolset ``cronjob``) over the ``cron`` actor that ``cron()`` looks up; ``scripts``
    checks a job's script (None: no script can be named)."""

    async def handler(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return await _CronjobCall(args, ctx, cron, registry, scripts).run(approval_timeout)

    registry.register(TOOL_NAME, TOOLSET, _SCHEMA, handler, emoji="⏰")


class _CronjobCall:
    """One call: its arguments checked, approved, sent to the actor, answered in Hermes's shape."""

    def __init__(
        self, args: dict[str, Any], ctx: ToolContext, cron: Callable[[], ActorHandle[CronMessage]],
        registry: ToolRegistry, scripts: CronScripts | None,
    ) -> None:
        self.args = args
        self.ctx = ctx
        self.cron = cron
        self.registry = registry
        self.scripts = scripts

    async def run(self, approval_timeout: float) -> ToolResult:
        action = str(self.args.get("action") or "").strip().lower()
        action = "run" if action in _RUN_ALIASES else action
        if action not in ACTIONS:
            raise ToolError(f"'action' must be one of: {', '.join(ACTIONS)}.")
        try:
            actor = self.cron()
        except ActorError as exc:
            raise ToolError("Scheduled jobs are not available in this daemon.") from exc
        if action == "list":
            views = await actor.ask(ListJobs())
            return ToolResult({"success": True, "count": len(views), "jobs": [_shown(v.job, v.running) for v in views]})
        jobs = {view.job.id: view.job for view in await actor.ask(ListJobs())}
        message, what = await self._message(action, jobs)
        await approve_side_effect(
            self.ctx, tool=TOOL_NAME, what=what, description="change the scheduled jobs", timeout=approval_timeout,
            refused="Not done: changing the scheduled jobs",
        )
        try:
            job = await actor.ask(message)
        except (LookupError, ValueError) as exc:
            raise ToolError(f"{exc}") from exc
        return ToolResult(_answer(action, job))

    async def _message(self, action: str, jobs: dict[str, CronJob]) -> tuple[Request[CronJob], str]:
        if action == "create":
            spec = await self._spec(jobs)
            return AddJob(spec), f"schedule a job [{spec.schedule}]: {spec.prompt or ', '.join(spec.skills) or spec.script}"
        job_id = _job_ref(self.args.get("job_id"), jobs)
        if job_id is None:
            raise ToolError(f"'{action}' needs the job_id of a job: {self.args.get('job_id')!r} is none. Call action='list' for the ids.")
        if action == "update":
            changes = await self._fields(jobs, jobs[job_id])
            if not changes:
                raise ToolError("Nothing to update: give the fields to change.")
            return UpdateJob(job_id, changes), f"change the scheduled job {job_id}: {', '.join(sorted(changes))}"
        return _CHANGES[action](job_id), f"{action} the scheduled job {job_id}"

    async def _spec(self, jobs: dict[str, CronJob]) -> JobSpec:
        schedule = self.args.get("schedule")
        if not isinstance(schedule, str) or not schedule.strip():
            raise ToolError("'create' needs 'schedule' (e.g. 'every 2h', '0 9 * * *').")
        fields = await self._fields(jobs, None)
        if fields.get("no_agent"):
            if not fields.get("script"):
                raise ToolError("no_agent=true needs a script: the script is the job.")
        elif not fields.get("prompt") and not fields.get("skills"):
            raise ToolError("'create' needs a 'prompt' (or skills to follow).")
        return JobSpec(schedule.strip(), **{"prompt": "", **fields})

    async def _fields(self, jobs: dict[str, CronJob], current: CronJob | None) -> dict[str, Any]:
        """The job fields the arguments set, checked; on update an empty value clears its field."""
        args, fields = self.args, {}
        for name in ("name", "prompt"):
            if isinstance(args.get(name), str) and (current is None or args[name] != ""):
                fields[name] = args[name]
        if current is not None and isinstance(args.get("schedule"), str) and args["schedule"].strip():
            fields["schedule"] = args["schedule"].strip()
        if "deliver" in args:
            fields["deliver"] = _destination(args["deliver"])
        if "skills" in args:
            fields["skills"] = _names(args["skills"], "skills")
        if "model" in args:
            fields["model"], fields["provider"] = _model(args["model"])
        if "repeat" in args and args["repeat"] is not None:
            fields["repeat"] = args["repeat"] if args["repeat"] > 0 else None
        if "script" in args:
            fields["script"] = await self._script(args["script"])
        if "no_agent" in args and args["no_agent"] is not None:
            fields["no_agent"] = bool(args["no_agent"])
            if fields["no_agent"] and not fields.get("script", current.script if current else None):
                raise ToolError("no_agent=true needs a script: set one in the same call, or on the job first.")
        if "context_from" in args:
            fields["context_from"] = _names(args["context_from"], "context_from")
            unknown = [job_id for job_id in fields["context_from"] if job_id not in jobs]
            if unknown:
                raise ToolError(f"context_from: no job {', '.join(unknown)}. Call action='list' for the ids.")
        if "enabled_toolsets" in args:
            fields["toolsets"] = self._toolsets(_names(args["enabled_toolsets"], "enabled_toolsets"))
        if "workdir" in args:
            fields["workdir"] = await _workdir(args["workdir"])
        return fields

    async def _script(self, script: object) -> str | None:
        if script in (None, ""):
            return None
        if self.scripts is None:
            raise ToolError("Job scripts are not available here.")
        try:
            await trio.to_thread.run_sync(self.scripts.check, str(script))
        except ScriptRefused as exc:
            raise ToolError(f"script: {exc}") from exc
        return str(script)

    def _toolsets(self, names: tuple[str, ...]) -> tuple[str, ...]:
        catalog = ToolsetCatalog(self.registry)
        for name in names:
            try:
                catalog.get(name)
            except UnknownToolsetError as exc:
                raise ToolError(f"enabled_toolsets: {exc}") from exc
        return names


def _job_ref(ref: object, jobs: dict[str, CronJob]) -> str | None:
    """The job ``ref`` names: its id, or, as Hermes takes it, a name only one job has."""
    if not isinstance(ref, str):
        return None
    if ref in jobs:
        return ref
    named = [job.id for job in jobs.values() if job.name == ref]
    return named[0] if len(named) == 1 else None


def _destination(value: object) -> str | None:
    if value in (None, "", "local"):
        return None
    try:
        Destination.parse(str(value))
    except UnknownDestination as exc:
        raise ToolError(f"'deliver': {exc}") from exc
    return str(value)


def _names(value: object, what: str) -> tuple[str, ...]:
    """A list of names (Hermes also takes one name as a string); empty clears."""
    items = [value] if isinstance(value, str) else value if isinstance(value, list) else None
    if items is None:
        raise ToolError(f"'{what}' must be a list of names.")
    return tuple(str(item).strip() for item in items if str(item).strip())


def _model(value: object) -> tuple[str | None, str | None]:
    if not isinstance(value, dict):
        raise ToolError("'model' must be an object: {\"model\": NAME, \"provider\": PROVIDER}.")
    model, provider = (str(value.get(key) or "").strip() or None for key in ("model", "provider"))
    return model, provider if model else None


async def _workdir(value: object) -> str | None:
    if value in (None, ""):
        return None
    path = str(value)
    if not os.path.isabs(path) or not await trio.to_thread.run_sync(os.path.isdir, path):
        raise ToolError(f"workdir: {path!r} is not an existing absolute directory.")
    return path


def _answer(action: str, job: CronJob) -> dict[str, Any]:
    """Hermes's answer to a change of ``job``."""
    shown = _shown(job, action == "run")
    if action == "create":
        return {
            "success": True, "job_id": job.id, "name": job.name, "skills": list(job.skills), "schedule": shown["schedule"],
            "repeat": shown["repeat"], "deliver": shown["deliver"], "next_run_at": shown["next_run_at"], "job": shown,
            "message": f"Cron job '{job.name}' created.",
        }  # fmt: skip
    if action == "remove":
        removed = {"id": job.id, "name": job.name, "schedule": job.schedule.text}
        return {"success": True, "message": f"Cron job '{job.name}' removed.", "removed_job": removed}
    if action == "run":
        where = f"delivered to {job.deliver}" if job.deliver else "kept in the job's record (see list)"
        return {"success": True, "job": shown, "message": f"A run started; its answer will be {where}."}
    return {"success": True, "job": shown}


def _shown(job: CronJob, running: bool) -> dict[str, Any]:
    """A job as Hermes's ``_format_job`` shows it, with our ``running`` and ``last_error``."""
    shown: dict[str, Any] = {
        "job_id": job.id,
        "name": job.name,
        "skills": list(job.skills),
        "prompt_preview": job.prompt if len(job.prompt) <= _PROMPT_PREVIEW_CHARS else job.prompt[:_PROMPT_PREVIEW_CHARS] + "...",
        "model": job.model,
        "provider": job.provider,
        "schedule": job.schedule.text,
        "repeat": _repeat(job),
        "deliver": job.deliver or "local",
        "next_run_at": job.next_run.isoformat() if job.next_run else None,
        "last_run_at": job.last_run.isoformat() if job.last_run else None,
        "last_status": job.last_status,
        "last_error": job.last_error,
        "state": job.state.value,
        "running": running,
    }
    optional = {
        "script": job.script, "no_agent": job.no_agent, "enabled_toolsets": list(job.toolsets),
        "workdir": job.workdir, "context_from": list(job.context_from),
    }
    shown.update({key: value for key, value in optional.items() if value})
    return shown


def _repeat(job: CronJob) -> str:
    """Hermes's ``repeat`` display: forever, once, ``N times``, or ``done/N`` once it has run."""
    if job.repeat is None:
        return "once" if job.schedule.kind is ScheduleKind.ONCE else "forever"
    if job.runs:
        return f"{job.runs}/{job.repeat}"
    return "once" if job.repeat == 1 else f"{job.repeat} times"
