"""``cron``: the actor that runs scheduled jobs at their times.

Messages: :class:`AddJob`, :class:`UpdateJob`, :class:`RemoveJob`, :class:`PauseJob`, :class:`ResumeJob`,
:class:`RunNow`, :class:`ListJobs`, and :class:`RunEnded` from its own runs. State: the jobs by id, and the ids of the runs under way. Loop:
wait for a message or the earliest next run, whichever comes first; the wait is a Trio deadline
set from the wall clock, re-read at least every :data:`LONGEST_SLEEP` seconds so that a change of the
system clock (a suspend, NTP) is noticed without a polling loop.

Each run is the ``runner``'s: a fresh ``cron`` session in production. Its answer goes to the job's
destination through ``deliver`` (or stays in the job's record when it has none); a run with nothing
to report (a script's empty output) sends nothing; a failure is reported there too, and the job backs off (:meth:`CronJob.after_run`). Runs of one job never
overlap: a run that falls due while the previous one is still going is skipped, and said so.
"""

from __future__ import annotations

import heapq
import logging
import secrets
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime
from typing import Any, Protocol
from zoneinfo import ZoneInfo

import attrs
import trio

from actors import Actor, Rejected
from messages.supervision import ActorState
from messages.request import Request
from actors.platform.cron.jobs import CronJob, JobState, MissedPolicy
from actors.platform.cron.schedule import ScheduleError, parse_schedule

__all__ = [
    "CRON",
    "LONGEST_SLEEP",
    "AddJob",
    "CronActor",
    "CronRunFailed",
    "JobBook",
    "JobRunner",
    "JobSpec",
    "JobView",
    "ListJobs",
    "PauseJob",
    "RemoveJob",
    "ResumeJob",
    "RunEnded",
    "RunNow",
    "UpdateJob",
]

log = logging.getLogger("hermes_actors.platform.cron")

#: The actor's name under the root.
CRON = "cron"
#: The longest the actor sleeps before it reads the wall clock again.
LONGEST_SLEEP = 300.0


# -- messages -------------------------------------------------------------------------------------


@attrs.frozen
class JobSpec:
    """A job as a person or the model asks for it; the actor reads its schedule and gives it an id."""

    schedule: str
    prompt: str
    name: str | None = None
    deliver: str | None = None
    skills: tuple[str, ...] = ()
    model: str | None = None
    missed: MissedPolicy = MissedPolicy.SKIP
    time_budget: float | None = None
    token_budget: int | None = None
    approvals: str | None = None
    provider: str | None = None
    repeat: int | None = None
    script: str | None = None
    no_agent: bool = False
    toolsets: tuple[str, ...] = ()
    workdir: str | None = None
    context_from: tuple[str, ...] = ()


@attrs.frozen
class AddJob(Request[CronJob]):
    """Schedule a new job (a spec, or a job already made); the reply is the job as scheduled.

    A spec whose schedule does not read is refused with its :class:`ScheduleError`.
    """

    job: JobSpec | CronJob


@attrs.frozen
class JobView:
    """A job and whether a run of it is under way (the reply to :class:`ListJobs`)."""

    job: CronJob
    running: bool


@attrs.frozen
class UpdateJob(Request[CronJob]):
    """Change fields of a job (:class:`CronJob`'s names; ``schedule`` as its text); the reply is the job.

    A new schedule is read as of now and sets the next run (a paused job stays paused); a field a job
    does not have, or a schedule that does not read, is refused.
    """

    job_id: str
    changes: Mapping[str, Any]


@attrs.frozen
class RemoveJob(Request[CronJob]):
    """Delete a job (a run under way finishes); the reply is the removed job."""

    job_id: str


@attrs.frozen
class PauseJob(Request[CronJob]):
    """Stop scheduling a job until it is resumed; the reply is the job."""

    job_id: str


@attrs.frozen
class ResumeJob(Request[CronJob]):
    """Schedule a paused job again from now; the reply is the job."""

    job_id: str


@attrs.frozen
class RunNow(Request[CronJob]):
    """Start a run of the job at once (refused while one is under way); the reply is the job."""

    job_id: str


@attrs.frozen
class ListJobs(Request[list[JobView]]):
    """The reply is every job as a :class:`JobView`, by next run."""


@attrs.frozen
class RunEnded:
    """Sent by a run's own task when it ends, so that the job's record changes in the actor's loop."""

    job_id: str
    output: str | None
    error: str | None
    undelivered: str | None = None


CronMessage = AddJob | UpdateJob | RemoveJob | PauseJob | ResumeJob | RunNow | ListJobs | RunEnded


class CronRunFailed(Exception):
    """A run that did not produce an answer; ``str()`` says why, for the job's record and destination."""


class JobRunner(Protocol):
    """Runs one job's turn (a fresh ``cron`` session) and returns its final answer."""

    async def __call__(self, job: CronJob, upstream: Mapping[str, str]) -> str | None:
        """Run ``job``, given the latest answers of its ``context_from`` jobs (by id); None: nothing to
        report, so nothing is delivered.

        Raises:
            CronRunFailed: the run gave no answer.
        """
        ...


class JobBook(Protocol):
    """Where jobs are kept between daemon runs."""

    async def load_jobs(self) -> list[CronJob]:
        """Every job stored."""
        ...

    async def save_job(self, job: CronJob) -> None:
        """Store a job, replacing the one with its id."""
        ...

    async def delete_job(self, job_id: str) -> None:
        """Forget a job."""
        ...


# -- the actor ------------------------------------------------------------------------------------


class CronActor(Actor[CronMessage]):
    """Runs every scheduled job at its time; see the module's docstring.

    Args:
        book: where jobs are stored.
        runner: runs one job's turn.
        deliver: sends a text to a destination (``telegram:CHAT``).
        zone: the user's time zone (cron expressions and ISO times without an offset).
        now: the wall clock (aware); tests tie it to Trio's clock.
    """

    kind = "cron"

    def __init__(
        self,
        book: JobBook,
        runner: JobRunner,
        deliver: Callable[[str, str], Awaitable[None]],
        zone: ZoneInfo,
        now: Callable[[], datetime],
    ) -> None:
        super().__init__()
        self.book = book
        self.runner = runner
        self.deliver = deliver
        self.zone = zone
        self.now = now
        self.jobs: dict[str, CronJob] = {}
        self.running: set[str] = set()
        self.runs_started = 0
        # (next run, job id), stale entries included: an entry counts only while it matches its job.
        self._due: list[tuple[datetime, str]] = []

    def snapshot_details(self) -> dict[str, Any]:
        upcoming = self._next_due()
        return {
            "jobs": len(self.jobs),
            "active": sum(1 for job in self.jobs.values() if job.state is JobState.ACTIVE),
            "running": sorted(self.running),
            "runs_started": self.runs_started,
            "next_due": upcoming.next_run.isoformat() if upcoming is not None and upcoming.next_run else None,
        }

    async def on_start(self) -> None:
        now = self.now()
        for job in await self.book.load_jobs():
            loaded = job.on_load(now, self.zone)
            if loaded.last_status == "skipped" and loaded.last_error != job.last_error:
                log.warning("cron job %s (%s): %s", job.id, job.name, loaded.last_error)
            if loaded != job:
                await self.book.save_job(loaded)
            self._keep(loaded)

    async def main(self) -> None:
        mailbox = self.mailbox
        while True:
            self._start_due()
            upcoming = self._next_due()
            wait = LONGEST_SLEEP
            if upcoming is not None and upcoming.next_run is not None:
                wait = min(wait, max(0.0, (upcoming.next_run - self.now()).total_seconds()))
            with trio.move_on_after(wait):
                try:
                    item = await mailbox.get()
                except (trio.EndOfChannel, trio.ClosedResourceError):
                    return
                await self.serve_item(item)
            self.state = ActorState.IDLE

    async def handle(self, message: CronMessage) -> Any:
        now = self.now()
        match message:
            case AddJob(job=JobSpec() as spec):
                return await self._store(self._new_job(spec, now).scheduled(now, self.zone))
            case AddJob(job=CronJob() as job):
                if job.id in self.jobs:
                    raise Rejected(ValueError(f"a job {job.id} exists already"))
                return await self._store(job.scheduled(now, self.zone))
            case RemoveJob(job_id=job_id):
                job = self._job(job_id)
                del self.jobs[job_id]
                await self.book.delete_job(job_id)
                return job
            case UpdateJob(job_id=job_id, changes=changes):
                return await self._store(self._updated(self._job(job_id), changes, now))
            case PauseJob(job_id=job_id):
                return await self._store(attrs.evolve(self._job(job_id), state=JobState.PAUSED, next_run=None))
            case ResumeJob(job_id=job_id):
                job = attrs.evolve(self._job(job_id), state=JobState.ACTIVE)
                return await self._store(job.scheduled(now, self.zone))
            case RunNow(job_id=job_id):
                job = self._job(job_id)
                if job_id in self.running:
                    raise Rejected(ValueError(f"job {job_id} is running already"))
                if job.state is not JobState.ACTIVE:
                    # Paused means "do not run": a run now would deliver what the user stopped.
                    raise Rejected(ValueError(f"job {job_id} is {job.state.value}: resume it first"))
                self._start(job)
                return job
            case RunEnded():
                return await self._ended(message)
            case ListJobs():
                far = datetime.max.replace(tzinfo=now.tzinfo)
                ordered = sorted(self.jobs.values(), key=lambda j: (j.next_run or far, j.name))
                return [JobView(job, job.id in self.running) for job in ordered]
        raise Rejected(TypeError(f"cron takes no {type(message).__name__}"))

    def _new_job(self, spec: JobSpec, now: datetime) -> CronJob:
        try:
            schedule = parse_schedule(spec.schedule, now, self.zone)
        except ScheduleError as exc:
            raise Rejected(exc) from exc
        job_id = f"cron-{secrets.token_hex(6)}"
        return CronJob(
            id=job_id, name=spec.name or job_id, schedule=schedule, created_at=now,
            # The spec's other fields are the job's, by name.
            **attrs.asdict(spec, recurse=False, filter=lambda field, _: field.name not in ("schedule", "name")),
        )

    def _updated(self, job: CronJob, changes: Mapping[str, Any], now: datetime) -> CronJob:
        unknown = set(changes) - set(attrs.fields_dict(CronJob)) | set(changes) & {"id", "created_at", "runs"}
        if unknown:
            raise Rejected(ValueError(f"a job's {', '.join(sorted(unknown))} cannot be changed"))
        fields = dict(changes)
        if "schedule" in fields:
            try:
                fields["schedule"] = parse_schedule(fields["schedule"], now, self.zone)
            except ScheduleError as exc:
                raise Rejected(exc) from exc
            # The new schedule's anchor (``in 30m``, an interval's grid), as the book reads it back.
            fields["created_at"] = now
        updated = attrs.evolve(job, **fields)
        return updated.scheduled(now, self.zone) if "schedule" in fields else updated

    # -- runs ---------------------------------------------------------------------------------

    def _next_due(self) -> CronJob | None:
        """The job whose run comes first (not one running); stale heap entries are dropped on the way."""
        due = self._due
        while due:
            at, job_id = due[0]
            job = self.jobs.get(job_id)
            if job is not None and job.next_run == at and job_id not in self.running:
                return job
            heapq.heappop(due)
        return None

    def _start_due(self) -> None:
        now = self.now()
        while (job := self._next_due()) is not None and job.next_run is not None and job.next_run <= now:
            self._start(job)

    def _start(self, job: CronJob) -> None:
        self.running.add(job.id)
        self.runs_started += 1
        upstream = {
            source: self.jobs[source].last_output or ""
            for source in job.context_from
            if source in self.jobs and self.jobs[source].last_output
        }
        self.start_soon(self._run, job, upstream, name=f"cron run {job.id}")

    async def _run(self, job: CronJob, upstream: Mapping[str, str]) -> None:
        output: str | None = None
        error: str | None = None
        try:
            output = await self.runner(job, upstream)
        except CronRunFailed as exc:
            error = str(exc) or type(exc).__name__
        log.info("cron job %s (%s): %s", job.id, job.name, "ok" if error is None else f"failed: {error}")
        undelivered = await self._report(job, output, error)
        await self.ref.tell(RunEnded(job.id, output, error, undelivered))

    async def _ended(self, ended: RunEnded) -> CronJob | None:
        self.running.discard(ended.job_id)
        current = self.jobs.get(ended.job_id)
        if current is None:  # removed while it ran
            return None
        now = self.now()
        updated = current.after_run(now, self.zone, output=ended.output, error=ended.error)
        if ended.error is None and ended.undelivered is not None:
            # The run succeeded and is not run again (its work is done); the record says its answer did
            # not arrive, as a failure: "ok" told the user it had.
            updated = attrs.evolve(updated, last_status="failed", last_error=ended.undelivered)
        if updated.next_run is not None and updated.next_run <= now:
            # A run fell due while this one ran: it is not started late, and not made up.
            log.warning("cron job %s ran past its next run; that run is skipped", current.id)
            updated = updated.scheduled(now, self.zone)
        return await self._store(updated)

    async def _report(self, job: CronJob, output: str | None, error: str | None) -> str | None:
        """Send the run's answer (or its failure) to the job's destination; why that failed, if it did."""
        if job.deliver is None or (error is None and output is None):
            return None
        # Named, so a chat that gets several jobs' answers can tell them apart.
        text = f"Cron job '{job.name}':\n\n{output or '(the job gave no answer)'}"
        if error is not None:
            text = f"Cron job '{job.name}' failed: {error}"
        try:
            await self.deliver(job.deliver, text)
        except Exception as exc:  # a platform down must not stop the scheduler
            log.warning("cron job %s: delivery to %s failed: %s", job.id, job.deliver, exc)
            return f"the answer was not delivered to {job.deliver}: {exc}"
        return None

    async def _store(self, job: CronJob) -> CronJob:
        self._keep(job)
        await self.book.save_job(job)
        return job

    def _keep(self, job: CronJob) -> None:
        self.jobs[job.id] = job
        if job.next_run is not None:
            heapq.heappush(self._due, (job.next_run, job.id))

    def _job(self, job_id: str) -> CronJob:
        job = self.jobs.get(job_id)
        if job is None:
            raise Rejected(LookupError(f"no cron job {job_id}"))
        return job
