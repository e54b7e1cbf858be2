"""The cron actor with many jobs scheduled and idle; prints its figures.

    .venv/bin/python bench/bench_cron.py [--jobs 10000] [--minutes 10]

An in-process ``cron`` actor on Trio's real clock, its wall clock running ``--speedup`` times faster
than real time (so ten simulated minutes pass in seconds, as they would for the actor: it sleeps until the
next run by a deadline). Jobs are daily at random minutes, so none falls due in the window; a job store
in memory. Prints: the time to add the jobs (each through the actor's mailbox, as ``cron add`` does), the
memory per job, and the process CPU per minute of simulated time while they sit idle.
"""

from __future__ import annotations

import argparse
import gc
import random
import resource
import sys
import time
import tracemalloc
from datetime import datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from supervisor import ChildSpec
from actors.platform.cron.actor import AddJob, CronActor, JobSpec, ListJobs  # noqa: E402
from actors.platform.cron.jobs import CronJob  # noqa: E402
from supervisor import open_actor_system  # noqa: E402

ZONE = ZoneInfo("UTC")
START = datetime(2026, 11, 24, 0, 5, tzinfo=timezone.utc)


class _Book:
    def __init__(self) -> None:
        self.saved: dict[str, CronJob] = {}

    async def load_jobs(self) -> list[CronJob]:
        return []

    async def save_job(self, job: CronJob) -> None:
        self.saved[job.id] = job

    async def delete_job(self, job_id: str) -> None:
        self.saved.pop(job_id, None)


async def _never(job: CronJob) -> str:
    raise AssertionError("no job should fall due in the window")


async def _nowhere(destination: str, text: str) -> None:
    return None


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def main(jobs: int, minutes: float, speedup: float) -> None:
    origin = trio.current_time()

    def wall() -> datetime:
        return START + timedelta(seconds=(trio.current_time() - origin) * speedup)

    rng = random.Random(7)

    def spec(n: int) -> JobSpec:
        # Daily at 01:00-23:59: none due in the first minutes after 00:05.
        return JobSpec(f"{rng.randrange(60)} {rng.randrange(1, 24)} * * *", f"job {n}")

    # Memory, on a separate actor: tracemalloc slows every allocation, so it is off while timing.
    sample = 1000
    probe = CronActor(_Book(), _never, _nowhere, ZONE, wall)
    async with open_actor_system([ChildSpec("cron", lambda: probe)]) as system:
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        for n in range(sample):
            await system.lookup("cron").ask(AddJob(spec(n)))
        per_job = (tracemalloc.get_traced_memory()[0] - before) / sample
        tracemalloc.stop()
    actor = CronActor(_Book(), _never, _nowhere, ZONE, wall)
    async with open_actor_system([ChildSpec("cron", lambda: actor)]) as system:
        ref = system.lookup("cron")
        started = time.perf_counter()
        for n in range(jobs):
            await ref.ask(AddJob(spec(n)))
        added = time.perf_counter() - started
        listed = time.perf_counter()
        views = await ref.ask(ListJobs())
        listing = time.perf_counter() - listed
        assert len(views) == jobs
        cpu0, wall0 = _cpu(), time.perf_counter()
        await trio.sleep(minutes * 60 / speedup)
        idle_cpu, idle_wall = _cpu() - cpu0, time.perf_counter() - wall0
    print(f"cron actor, {jobs:,} daily jobs, in-process (speedup {speedup:g}x)")
    print(f"  add {jobs:,} jobs through the mailbox: {added:.2f} s ({added / jobs * 1e6:.0f} us each)")
    print(f"  memory per job (tracemalloc, {sample:,} jobs): {per_job / 1024:.2f} KB")
    print(f"  list all jobs: {listing * 1000:.1f} ms")
    print(f"  idle for {idle_wall:.2f} s ({minutes:g} minutes of the jobs' clock): process CPU {idle_cpu * 1000:.1f} ms "
          f"({idle_cpu / idle_wall * 100:.3f} % of a core)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--speedup", type=float, default=60.0)
    args = parser.parse_args()
    trio.run(main, args.jobs, args.minutes, args.speedup)
