"""Jobs kept in the store: a job as a JSON record, and the :class:`~actors.platform.cron.actor.JobBook` over
the store's ``cron_jobs``.

The schedule is stored as its text and parsed again on load, against the job's creation time (the
anchor of ``in 30m``), so a stored job never depends on how this version lays out a
:class:`~actors.platform.cron.schedule.Schedule`. A record that no longer reads is skipped with a log line,
never a daemon that cannot start.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import attrs

from actors.platform.cron.jobs import CronJob, JobState, MissedPolicy
from actors.platform.cron.schedule import parse_schedule
from store.protocol import CronJobStore

__all__ = ["StoreJobBook", "job_from_record", "job_record"]

log = logging.getLogger("hermes_actors.platform.cron")

_TIMES = ("created_at", "next_run", "last_run")
_LISTS = ("skills", "toolsets", "context_from")


def job_record(job: CronJob) -> dict[str, Any]:
    """``job`` as the JSON object the store keeps."""
    record = attrs.asdict(job, recurse=False)
    record["schedule"] = job.schedule.text
    for name in _LISTS:
        record[name] = list(record[name])
    record["missed"] = job.missed.value
    record["state"] = job.state.value
    for name in _TIMES:
        value = record[name]
        record[name] = None if value is None else value.isoformat()
    return record


def job_from_record(record: dict[str, Any], zone: ZoneInfo) -> CronJob:
    """A stored record as a job.

    Raises:
        ValueError: the record does not read as a job (a :class:`ScheduleError` among them).
    """
    fields = dict(record)
    try:
        for name in _TIMES:
            fields[name] = None if fields.get(name) is None else datetime.fromisoformat(fields[name])
        fields["missed"] = MissedPolicy(fields["missed"])
        fields["state"] = JobState(fields["state"])
        for name in _LISTS:
            fields[name] = tuple(fields.get(name) or ())
        # As of its creation: a one-shot's time was in the future then, and ``in 30m`` counts from it.
        fields["schedule"] = parse_schedule(fields["schedule"], fields["created_at"], zone)
        return CronJob(**fields)
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"not a cron job record: {exc}") from exc


class StoreJobBook:
    """Jobs in a store that keeps ``cron_jobs`` (SQLite, or the in-memory store of tests)."""

    def __init__(self, store: CronJobStore, zone: ZoneInfo) -> None:
        self.store = store
        self.zone = zone

    async def load_jobs(self) -> list[CronJob]:
        """Every stored job that reads; one that does not is logged and left in the store."""
        jobs = []
        for record in await self.store.cron_jobs():
            try:
                jobs.append(job_from_record(record, self.zone))
            except ValueError as exc:
                log.error("cron job %s could not be read and is not scheduled: %s", record.get("id", "?"), exc)
        return jobs

    async def save_job(self, job: CronJob) -> None:
        """Store a job (replacing its earlier record)."""
        await self.store.save_cron_job(job.id, job_record(job))

    async def delete_job(self, job_id: str) -> None:
        """Forget a job."""
        await self.store.delete_cron_job(job_id)
