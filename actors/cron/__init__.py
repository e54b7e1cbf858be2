"""Scheduled jobs (issue 18): schedules, jobs and the ``cron`` actor that runs them at their times.

Jobs persist in the store (``cron_jobs``, :class:`~actors.cron.book.StoreJobBook`); each run is a
``cron`` session (:mod:`actors.cron.runner`); people use ``hermes-actors cron``, the model the
``cronjob`` tool (:mod:`actors.cron.tool`).
"""

from actors.cron.actor import CronActor, CronRunFailed, JobBook, JobRunner
from actors.cron.jobs import CronJob, JobState, MissedPolicy
from actors.cron.schedule import Schedule, ScheduleError, ScheduleKind, parse_schedule

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
