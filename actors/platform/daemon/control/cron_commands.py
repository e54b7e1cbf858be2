"""The ``hermes-actors cron`` requests: each becomes a message to the ``cron`` actor."""

from __future__ import annotations

from datetime import datetime, timezone

from actors import ActorError, ActorNotFound
from supervisor import ActorSystem
from actors.platform.cron import CronJob, MissedPolicy
from actors.platform.cron.actor import CRON, AddJob, JobSpec, ListJobs, PauseJob, RemoveJob, ResumeJob, RunNow
from control.errors import RequestFailed
from actors.platform.outbound import Destination, UnknownDestination
from messages import control as c

__all__ = ["cron_request"]

_VERBS = {"pause": PauseJob, "resume": ResumeJob, "remove": RemoveJob, "run_now": RunNow}


async def cron_request(system: ActorSystem, request: c.CronRequest) -> c.CronReply:
    """Serve one ``cron`` verb.

    Raises:
        RequestFailed: ``invalid`` (a bad schedule, destination, policy or verb), ``not_found`` (no
            such job), ``unavailable`` (this daemon runs no cron).
    """
    try:
        actor = system.lookup(CRON)
    except ActorNotFound as exc:
        raise RequestFailed("unavailable", "this daemon runs no cron jobs") from exc
    try:
        views = await actor.ask(ListJobs())
        running = {view.job.id for view in views if view.running}
        if request.action == "add":
            job = await actor.ask(AddJob(_spec(request)))
            return c.CronReply(request.request_id, [_status(job, running)], f"added {job.id}")
        if request.action in ("list", "status"):
            jobs = [view.job for view in views if request.action == "list" or view.job.id == request.job_id]
            if request.action == "status" and not jobs:
                raise RequestFailed("not_found", f"no cron job {request.job_id}")
            return c.CronReply(request.request_id, [_status(job, running) for job in jobs])
        verb = _VERBS.get(request.action)
        if verb is None:
            raise RequestFailed("invalid", f"unknown cron action {request.action!r}")
        job = await actor.ask(verb(request.job_id or ""))
        running |= {job.id} if request.action == "run_now" else set()
        return c.CronReply(request.request_id, [_status(job, running)], f"{request.action.replace('_', ' ')}: {job.id}")
    # What the actor refused (Rejected) comes back as the error it named.
    except LookupError as exc:
        raise RequestFailed("not_found", str(exc)) from exc
    except ValueError as exc:
        raise RequestFailed("invalid", str(exc)) from exc
    except ActorError as exc:
        raise RequestFailed("unavailable", f"the cron actor is not available: {exc}") from exc


def _spec(request: c.CronRequest) -> JobSpec:
    if not request.schedule or not request.prompt or not request.prompt.strip():
        raise RequestFailed("invalid", "cron add needs --schedule and --prompt")
    try:
        missed = MissedPolicy(request.missed)
    except ValueError as exc:
        raise RequestFailed("invalid", f"--missed must be skip or run_once, got {request.missed!r}") from exc
    if (request.time_budget is not None and not request.time_budget > 0) or (
        request.token_budget is not None and request.token_budget < 1
    ):
        raise RequestFailed("invalid", "--time-budget and --token-budget must be positive")
    if request.approvals not in (None, "deny", "approve"):
        raise RequestFailed("invalid", f"--approvals must be deny or approve, got {request.approvals!r}")
    if request.deliver is not None:
        try:
            Destination.parse(request.deliver)
        except UnknownDestination as exc:
            raise RequestFailed("invalid", f"--deliver: {exc}") from exc
    return JobSpec(
        request.schedule, request.prompt, name=request.name, deliver=request.deliver, skills=tuple(request.skills),
        model=request.model, missed=missed, time_budget=request.time_budget, token_budget=request.token_budget,
        approvals=request.approvals,
    )


def _status(job: CronJob, running: set[str]) -> c.CronJobStatus:
    def iso(moment: datetime | None) -> str | None:
        return None if moment is None else moment.astimezone(timezone.utc).isoformat()

    return c.CronJobStatus(
        id=job.id, name=job.name, schedule=job.schedule.text, state=job.state.value, running=job.id in running,
        deliver=job.deliver, next_run=iso(job.next_run), last_run=iso(job.last_run), last_status=job.last_status,
        last_error=job.last_error, last_output=job.last_output, approvals=job.approvals,
    )
