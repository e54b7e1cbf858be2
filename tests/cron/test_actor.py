"""The cron actor on Trio's clock: runs at their times, no overlap, missed runs, delivery, backoff."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import attrs
import pytest
import trio
import trio.testing

from supervisor import ActorSystem, ChildSpec
from actors.platform.cron import parse_schedule
from actors.platform.cron.actor import (
    AddJob, CronActor, CronRunFailed, JobSpec, ListJobs, PauseJob, RemoveJob, ResumeJob, RunNow, UpdateJob,
)
from actors.platform.cron.jobs import CronJob, JobState, MissedPolicy
from supervisor import open_actor_system

ZONE = ZoneInfo("Europe/Berlin")
START = datetime(2026, 11, 24, 8, 0, tzinfo=timezone.utc)


def wall() -> datetime:
    """The wall clock, tied to Trio's (a MockClock starts at 0)."""
    return START + timedelta(seconds=trio.current_time())


class Book:
    """Jobs kept in memory, as the store keeps them: what was saved is what a restart loads."""

    def __init__(self, *jobs: CronJob) -> None:
        self.saved: dict[str, CronJob] = {job.id: job for job in jobs}

    async def load_jobs(self) -> list[CronJob]:
        return list(self.saved.values())

    async def save_job(self, job: CronJob) -> None:
        self.saved[job.id] = job

    async def delete_job(self, job_id: str) -> None:
        self.saved.pop(job_id, None)


@attrs.define
class Runner:
    """Records each run's start; each run takes ``takes`` seconds and fails while ``failing``."""

    takes: float = 60.0
    failing: bool = False
    silent: bool = False
    started: list[tuple[str, float]] = attrs.Factory(list)
    finished: list[str] = attrs.Factory(list)
    upstreams: list[Mapping[str, str]] = attrs.Factory(list)

    async def __call__(self, job: CronJob, upstream: Mapping[str, str]) -> str | None:
        self.started.append((job.id, trio.current_time()))
        self.upstreams.append(upstream)
        await trio.sleep(self.takes)
        if self.failing:
            raise CronRunFailed("the provider is down")
        self.finished.append(job.id)
        return None if self.silent else f"answer of {job.name}"


def job(schedule: str, *, name: str = "report", missed: MissedPolicy = MissedPolicy.SKIP, **fields: object) -> CronJob:
    return CronJob(
        id=f"cron-{name}", name=name, schedule=parse_schedule(schedule, START, ZONE), prompt="Write the report.",
        created_at=START, missed=missed, **fields,  # type: ignore[arg-type]  # the cases' keyword arguments vary; the call checks them at run time
    )


@asynccontextmanager
async def cron(
    book: Book, runner: Runner, deliver: Callable[[str, str], Awaitable[None]] | None = None
) -> AsyncIterator[tuple[ActorSystem, CronActor]]:
    delivered: list[tuple[str, str]] = []

    async def keep(destination: str, text: str) -> None:
        delivered.append((destination, text))

    actor = CronActor(book, runner, deliver or keep, ZONE, wall)
    actor.delivered = delivered  # type: ignore[attr-defined]  # the test's own record of deliveries, kept on the actor
    async with open_actor_system([ChildSpec("cron", lambda: actor)]) as system:
        yield system, actor


class TestRuns:
    """Jobs run at their times; one job's runs never overlap."""

    async def test_an_interval_job_runs_on_its_grid(self, autojump_clock: trio.testing.MockClock) -> None:
        book, runner = Book(), Runner()
        async with cron(book, runner) as (system, actor):
            await system.lookup("cron").ask(AddJob(job("every 1h")))
            await trio.sleep(3 * 3600 + 120)
        assert [round(at) for _, at in runner.started] == [3600, 7200, 10800]
        assert book.saved["cron-report"].last_status == "ok"
        assert book.saved["cron-report"].next_run == START + timedelta(hours=4)

    async def test_a_run_past_the_next_one_skips_it(self, autojump_clock: trio.testing.MockClock) -> None:
        runner = Runner(takes=90 * 60)
        async with cron(Book(), runner) as (system, actor):
            await system.lookup("cron").ask(AddJob(job("every 1h")))
            await trio.sleep(4 * 3600 + 60)
            assert actor.snapshot_details()["running"] == ["cron-report"] or runner.started
        starts = [round(at) for _, at in runner.started]
        assert starts == [3600, 3 * 3600]  # 2 h fell due mid-run: not started, not made up
        assert all(later - earlier >= 90 * 60 for earlier, later in zip(starts, starts[1:]))

    async def test_the_actor_sleeps_until_the_next_run(self, autojump_clock: trio.testing.MockClock) -> None:
        """No polling: an idle day with one daily job wakes the actor a handful of times, not thousands."""
        wakeups = 0
        original = CronActor._start_due

        def counted(self: CronActor) -> None:
            nonlocal wakeups
            wakeups += 1
            original(self)

        CronActor._start_due = counted  # type: ignore[method-assign]  # the test counts calls by replacing the method for its run
        try:
            async with cron(Book(), Runner()) as (system, _):
                await system.lookup("cron").ask(AddJob(job("0 9 * * *")))
                await trio.sleep(86400)
        finally:
            CronActor._start_due = original  # type: ignore[method-assign]  # puts back the method replaced above
        assert wakeups <= 86400 / 300 + 5  # at most one look per LONGEST_SLEEP


class TestCommands:
    """Pause, resume, run now, remove, list."""

    async def test_pause_resume_run_now_remove(self, autojump_clock: trio.testing.MockClock) -> None:
        book, runner = Book(), Runner()
        async with cron(book, runner) as (system, _):
            ref = system.lookup("cron")
            await ref.ask(AddJob(job("every 1h")))
            paused = await ref.ask(PauseJob("cron-report"))
            assert paused.state is JobState.PAUSED and paused.next_run is None
            with pytest.raises(Exception, match="is paused: resume it first"):
                await ref.ask(RunNow("cron-report"))
            await trio.sleep(2 * 3600)
            assert runner.started == []
            resumed = await ref.ask(ResumeJob("cron-report"))
            assert resumed.next_run == START + timedelta(hours=3)
            await ref.ask(RunNow("cron-report"))
            await trio.sleep(1)
            with pytest.raises(Exception, match="running already"):
                await ref.ask(RunNow("cron-report"))
            await trio.sleep(120)
            assert [(view.job.id, view.running) for view in await ref.ask(ListJobs())] == [("cron-report", False)]
            await ref.ask(RemoveJob("cron-report"))
            assert book.saved == {} and await ref.ask(ListJobs()) == []
            with pytest.raises(Exception, match="no cron job"):
                await ref.ask(PauseJob("cron-report"))
        assert len(runner.started) == 1


class TestSpecs:
    """A job asked for by a person or the model: its schedule read in the actor, an id given."""

    async def test_a_spec_becomes_a_job(self, autojump_clock: trio.testing.MockClock) -> None:
        book = Book()
        async with cron(book, Runner()) as (system, _):
            ref = system.lookup("cron")
            added = await ref.ask(AddJob(JobSpec("0 9 * * 1-5", "Summarise the inbox.", name="inbox")))
            assert added.id.startswith("cron-") and added.name == "inbox" and added.created_at == START
            assert added.next_run == datetime(2026, 11, 25, 8, 0, tzinfo=timezone.utc)  # 09:00 in Berlin
            with pytest.raises(Exception, match="not a valid cron expression"):
                await ref.ask(AddJob(JobSpec("99 * * * *", "x")))
        assert list(book.saved) == [added.id]


class TestHermesFields:
    """Hermes's update, repeat, context_from and silent runs."""

    async def test_update(self, autojump_clock: trio.testing.MockClock) -> None:
        """A new schedule sets the next run as of now; other fields change in place; ids and unknown
        fields are refused."""
        book = Book()
        async with cron(book, Runner()) as (system, _):
            ref = system.lookup("cron")
            await ref.ask(AddJob(job("every 1d")))
            await trio.sleep(600)
            updated = await ref.ask(UpdateJob("cron-report", {"schedule": "every 2h", "skills": ("a", "b"), "prompt": "New."}))
            assert updated.next_run == START + timedelta(seconds=600, hours=2)
            assert (updated.skills, updated.prompt) == (("a", "b"), "New.")
            await ref.ask(PauseJob("cron-report"))
            assert (await ref.ask(UpdateJob("cron-report", {"schedule": "every 3h"}))).next_run is None, "still paused"
            for changes, needle in (({"id": "x"}, "id cannot be changed"), ({"colour": "red"}, "colour cannot"),
                                    ({"schedule": "every fortnight"}, "a number and a unit")):
                with pytest.raises(Exception, match=needle):
                    await ref.ask(UpdateJob("cron-report", changes))
        assert book.saved["cron-report"].prompt == "New."

    async def test_repeat(self, autojump_clock: trio.testing.MockClock) -> None:
        """A job asked to repeat twice runs twice, then is done."""
        book, runner = Book(), Runner(takes=1)
        async with cron(book, runner) as (system, _):
            await system.lookup("cron").ask(AddJob(JobSpec("every 1h", "x", name="twice", repeat=2)))
            await trio.sleep(5 * 3600)
        [done] = book.saved.values()
        assert len(runner.started) == 2 and (done.runs, done.state, done.next_run) == (2, JobState.DONE, None)

    async def test_context_from_and_a_silent_run(self, autojump_clock: trio.testing.MockClock) -> None:
        """A run is given the latest answers of the jobs it names; a run with nothing to report sends nothing."""
        book, runner = Book(), Runner(takes=1)
        async with cron(book, runner) as (system, actor):
            ref = system.lookup("cron")
            await ref.ask(AddJob(job("every 1d", name="collect", deliver="telegram:42")))
            await ref.ask(RunNow("cron-collect"))
            await trio.sleep(10)
            await ref.ask(AddJob(job("every 1d", name="digest", deliver="telegram:42", context_from=("cron-collect", "cron-gone"))))
            runner.silent = True
            await ref.ask(RunNow("cron-digest"))
            await trio.sleep(10)
            assert actor.delivered == [("telegram:42", "Cron job 'collect':\n\nanswer of collect")]  # type: ignore[attr-defined]  # the test's own record of deliveries, kept on the actor
        assert runner.upstreams == [{}, {"cron-collect": "answer of collect"}]


class TestMissedRuns:
    """Runs that fell due while the daemon was down: skipped (and recorded so), or run once."""

    @pytest.mark.parametrize(("policy", "runs_at_start"), [(MissedPolicy.SKIP, 0), (MissedPolicy.RUN_ONCE, 1)])
    async def test_the_policy_decides(
        self, autojump_clock: trio.testing.MockClock, policy: MissedPolicy, runs_at_start: int
    ) -> None:
        # Stored before a six-hour outage: due at 03:00 UTC, so three hourly runs were missed.
        stale = attrs.evolve(job("every 1h", missed=policy), next_run=START - timedelta(hours=5))
        book, runner = Book(stale), Runner()
        async with cron(book, runner):
            await trio.sleep(30 * 60)
        assert len(runner.started) == runs_at_start
        saved = book.saved["cron-report"]
        assert saved.next_run == START + timedelta(hours=1)
        if policy is MissedPolicy.SKIP:  # a trace of the run that did not happen, for `cron status`
            assert saved.last_status == "skipped"
            due = (START - timedelta(hours=5)).isoformat(timespec="seconds")
            assert saved.last_error == f"the run due at {due} was missed while the daemon was down, and skipped (missed: skip)"


class TestResults:
    """Answers go to the destination; failures are reported there and back off."""

    async def test_delivery_and_backoff(self, autojump_clock: trio.testing.MockClock) -> None:
        book, runner = Book(), Runner(takes=1)
        async with cron(book, runner) as (system, actor):
            await system.lookup("cron").ask(AddJob(job("every 1d", deliver="telegram:42")))
            await trio.sleep(86400 + 10)
            assert actor.delivered == [("telegram:42", "Cron job 'report':\n\nanswer of report")]  # type: ignore[attr-defined]  # the test's own record of deliveries, kept on the actor
            runner.failing = True
            await trio.sleep(86400 + 10)
            failed = book.saved["cron-report"]
            assert failed.failures == 1 and failed.last_error == "the provider is down"
            assert failed.next_run == START + timedelta(days=2, seconds=1 + 60)  # failed at +1 s; retry a minute on
            assert actor.delivered[-1] == ("telegram:42", "Cron job 'report' failed: the provider is down")  # type: ignore[attr-defined]  # the test's own record of deliveries, kept on the actor
            await trio.sleep(60 + 120 + 10)  # the retries: after 1 min, then 2
            assert book.saved["cron-report"].failures == 3
            runner.failing = False
            await trio.sleep(4 * 60 + 10)
            recovered = book.saved["cron-report"]
            assert recovered.failures == 0 and recovered.last_status == "ok"
            assert recovered.next_run == START + timedelta(days=3)

    async def test_a_failing_platform_does_not_stop_the_scheduler(self, autojump_clock: trio.testing.MockClock) -> None:
        async def down(destination: str, text: str) -> None:
            raise RuntimeError("telegram is not connected")

        book, runner = Book(), Runner(takes=1)
        async with cron(book, runner, deliver=down) as (system, _):
            await system.lookup("cron").ask(AddJob(job("every 1h", deliver="telegram:42")))
            await trio.sleep(2 * 3600 + 10)
        assert len(runner.finished) == 2
        record = book.saved["cron-report"]
        assert record.last_status == "failed" and record.failures == 0  # reported, not run again for a delivery
        assert record.last_error == "the answer was not delivered to telegram:42: telegram is not connected"

    async def test_stopping_mid_run_leaves_no_task(self, autojump_clock: trio.testing.MockClock) -> None:
        book, runner = Book(), Runner(takes=3600)
        async with cron(book, runner) as (system, actor):
            await system.lookup("cron").ask(AddJob(job("every 1h")))
            await trio.sleep(3600 + 5)
            assert actor.running == {"cron-report"}
            await system.root.terminate_child("cron", "test over")
            assert actor.stopped
        assert runner.finished == [] and book.saved["cron-report"].last_run is None
