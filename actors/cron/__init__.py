"""Scheduled jobs (issue 18): schedules, jobs and the ``cron`` actor that runs them at their times.

Jobs persist in the store (``cron_jobs``, :class:`~actors.cron.book.StoreJobBook`). Not yet wired
into the daemon: the ``cron`` commands, the ``cronjob`` tool and the runner that starts each run as a
``cron`` session come next.
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
