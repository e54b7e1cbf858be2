"""Scheduled jobs (issue 18): their schedules so far; the ``cron`` actor, store and commands follow."""

from actors.cron.schedule import Schedule, ScheduleError, ScheduleKind, parse_schedule

__all__ = ["Schedule", "ScheduleError", "ScheduleKind", "parse_schedule"]
