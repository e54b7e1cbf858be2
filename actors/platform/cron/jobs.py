"""A scheduled job: what it runs, where its answer goes, and when it runs next.

A job's next run comes from its schedule. After a failed run it backs off: the next try comes a
minute later, then two, doubling up to an hour, or at the schedule's own next run when that is
sooner; a success clears the count. A one-shot gives up after three failed tries.
"""

from __future__ import annotations

import enum
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import attrs

from actors.platform.cron.schedule import Schedule

__all__ = ["BACKOFF_FIRST", "BACKOFF_MAX", "ONE_SHOT_TRIES", "CronJob", "JobState", "MissedPolicy"]

#: The first retry after a failure, and the longest wait between retries.
BACKOFF_FIRST = timedelta(minutes=1)
BACKOFF_MAX = timedelta(hours=1)
#: Tries of a one-shot before it is given up.
ONE_SHOT_TRIES = 3


class JobState(enum.Enum):
    """Whether a job is scheduled."""

    ACTIVE = "active"
    PAUSED = "paused"
    DONE = "done"  # a one-shot that has run


class MissedPolicy(enum.Enum):
    """What a job does about runs that fell due while the daemon was down."""

    SKIP = "skip"  # wait for the next run after now
    RUN_ONCE = "run_once"  # run once now, however many were missed, then follow the schedule


@attrs.frozen
class CronJob:
    """One job, as stored. Times are aware (UTC).

    Attributes:
        id: its id (``cron-`` and hex digits).
        name: a name for people (``cron list``).
        schedule: when it runs.
        prompt: the user message each run starts with.
        deliver: where its answer goes (``telegram:CHAT``), or None to keep it in the store.
        skills: skills its sessions load.
        model: the model its sessions use (None: the configured default).
        provider: the provider of ``model`` (None: the configured one).
        repeat: how many runs it makes before it is done (None: once for a one-shot, forever for a
            recurring job), and ``runs``, how many it has made.
        script: a script under ``HERMES_ACTORS_HOME/scripts`` run before each run (its output is the
            run's context), or, with ``no_agent``, the whole job (its output is the answer).
        toolsets: the toolsets its sessions get (empty: the cron default).
        workdir: the directory its sessions and script run in (None: the cron default).
        context_from: jobs whose latest answers its runs are given.
        missed: its missed-run policy.
        approvals: how its runs answer dangerous commands, ``deny`` or ``approve`` (None:
            ``approvals.cron_mode``).
        time_budget / token_budget: what one run's turn may take, in seconds and tokens (None: the
            runner's default time, no token limit).
        created_at: when it was made (an interval's grid starts here).
        state: active, paused or done.
        next_run: when it runs next (None: paused or done).
        failures: failed runs in a row (its backoff).
        last_run / last_status / last_error / last_output: the latest run's time, ``ok``, ``failed``
            (its answer not delivered counts) or ``skipped`` (a run missed while the daemon was down),
            its error or note, and its final answer.
    """

    id: str
    name: str
    schedule: Schedule
    prompt: str
    created_at: datetime
    deliver: str | None = None
    skills: tuple[str, ...] = ()
    model: str | None = None
    provider: str | None = None
    repeat: int | None = None
    runs: int = 0
    script: str | None = None
    no_agent: bool = False
    toolsets: tuple[str, ...] = ()
    workdir: str | None = None
    context_from: tuple[str, ...] = ()
    missed: MissedPolicy = MissedPolicy.SKIP
    time_budget: float | None = None
    token_budget: int | None = None
    approvals: str | None = None
    state: JobState = JobState.ACTIVE
    next_run: datetime | None = None
    failures: int = 0
    last_run: datetime | None = None
    last_status: str | None = None
    last_error: str | None = None
    last_output: str | None = None

    def scheduled(self, now: datetime, zone: ZoneInfo) -> CronJob:
        """This job with its next run after ``now`` by its schedule (done, for a spent one-shot)."""
        if self.state is JobState.PAUSED:
            return attrs.evolve(self, next_run=None)
        following = self.schedule.next_after(now, zone, anchor=self.created_at)
        if following is None:
            return attrs.evolve(self, state=JobState.DONE, next_run=None)
        return attrs.evolve(self, state=JobState.ACTIVE, next_run=following)

    def on_load(self, now: datetime, zone: ZoneInfo) -> CronJob:
        """This job as a starting daemon finds it: a run missed while it was down is skipped or
        kept due now, by its policy."""
        if self.state is not JobState.ACTIVE or self.next_run is None or self.next_run > now:
            return self
        if self.missed is MissedPolicy.RUN_ONCE:
            return attrs.evolve(self, next_run=now)
        # Recorded, so `cron status` says why the run the user expected did not happen.
        missed = self.next_run.astimezone(timezone.utc).isoformat(timespec="seconds")
        note = f"the run due at {missed} was missed while the daemon was down, and skipped (missed: skip)"
        return attrs.evolve(self.scheduled(now, zone), last_status="skipped", last_error=note)

    def after_run(self, now: datetime, zone: ZoneInfo, *, output: str | None, error: str | None) -> CronJob:
        """This job once a run ended at ``now``: its result recorded and its next run set; done once it
        has made the ``repeat`` runs asked of it."""
        ran = attrs.evolve(self, runs=self.runs + 1)._recorded(now, zone, output=output, error=error)
        if self.repeat is not None and ran.runs >= self.repeat:  # every run counts, as in Hermes
            return attrs.evolve(ran, state=JobState.DONE, next_run=None)
        return ran

    def _recorded(self, now: datetime, zone: ZoneInfo, *, output: str | None, error: str | None) -> CronJob:
        if error is None:
            ran = attrs.evolve(self, failures=0, last_run=now, last_status="ok", last_error=None, last_output=output)
            return ran.scheduled(now, zone)
        failures = self.failures + 1
        wait = min(BACKOFF_FIRST * 2 ** (failures - 1), BACKOFF_MAX)
        failed = attrs.evolve(self, failures=failures, last_run=now, last_status="failed", last_error=error)
        regular = failed.scheduled(now, zone)
        if self.state is not JobState.ACTIVE:
            return regular
        retry = (now + wait).astimezone(timezone.utc)
        if regular.next_run is None:  # a one-shot: try again a few times, then give up
            return regular if failures >= ONE_SHOT_TRIES else attrs.evolve(failed, next_run=retry)
        return attrs.evolve(regular, next_run=min(retry, regular.next_run))
