"""Jobs in the real SQLite store: what a daemon saved, the next one loads, as it was."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import attrs

from actors.platform.cron import CronJob, JobState, MissedPolicy, parse_schedule
from actors.platform.cron.book import StoreJobBook, job_from_record, job_record
from config.store import StoreConfig
from store import SqliteSessionStore

ZONE = ZoneInfo("Europe/Berlin")
CREATED = datetime(2026, 11, 24, 8, 0, tzinfo=timezone.utc)


def _job(schedule: str, **fields: object) -> CronJob:
    return CronJob(
        id="cron-1", name="digest", schedule=parse_schedule(schedule, CREATED, ZONE), prompt="Summarise the news.",
        created_at=CREATED, **fields,  # type: ignore[arg-type]  # the cases' keyword arguments vary; the call checks them at run time
    )


def test_a_record_reads_back_as_the_job() -> None:
    for job in (
        _job("0 9 * * 1-5", deliver="telegram:42", skills=("news",), model="m", missed=MissedPolicy.RUN_ONCE),
        _job("in 30m", state=JobState.DONE, failures=2, last_run=CREATED, last_status="failed", last_error="x"),
        attrs.evolve(_job("every 2h"), next_run=CREATED + timedelta(hours=2)),
    ):
        assert job_from_record(job_record(job), ZONE) == job


async def test_saved_jobs_survive_a_restart_and_bad_ones_are_skipped(tmp_path: Path) -> None:
    path, config = tmp_path / "state.db", StoreConfig(busy_timeout_seconds=5.0)
    job = _job("every 2h", next_run=CREATED + timedelta(hours=2))
    async with SqliteSessionStore.open(path, config) as store:
        book = StoreJobBook(store, ZONE)
        await book.save_job(job)
        await store.save_cron_job("cron-bad", {"id": "cron-bad", "schedule": "every never"})
    async with SqliteSessionStore.open(path, config) as store:
        assert await StoreJobBook(store, ZONE).load_jobs() == [job]
        await StoreJobBook(store, ZONE).delete_job("cron-1")
        assert [record["id"] for record in await store.cron_jobs()] == ["cron-bad"]  # kept, not scheduled
