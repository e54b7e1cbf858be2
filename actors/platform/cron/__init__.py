"""Scheduled jobs (docs/DECISIONS.md#d-cron): schedules, jobs and the ``cron`` actor that runs them at their times.

Jobs persist in the store (``cron_jobs``, :class:`~actors.platform.cron.book.StoreJobBook`); each run is a
``cron`` session (:mod:`actors.platform.cron.runner`); people use ``hermes-actors cron``, the model the
``cronjob`` tool (:mod:`actors.platform.cron.tool`).
"""

from actors.platform.cron.actor import CronActor, CronRunFailed, JobBook, JobRunner
from actors.platform.cron.jobs import CronJob, JobState, MissedPolicy
from actors.platform.cron.schedule import Schedule, ScheduleError, ScheduleKind, parse_schedule

__all__ = [
    "CronActor",
    "CronJob",
    "CronRunFailed",
    "JobBook",
    "JobRunner",
    "JobState",
    "MissedPolicy",
    "Schedule",
    "ScheduleError",
    "ScheduleKind",
    "parse_schedule",
]
