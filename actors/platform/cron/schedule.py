"""When a cron job runs: cron expressions, intervals and one-shots, in the user's time zone.

Three forms, as ``hermes-actors cron add --schedule`` and the ``cronjob`` tool take them:

- a cron expression of five fields (``0 9 * * 1-5``), read by ``croniter`` in the configured zone;
- an interval, ``every 30m`` / ``every 2h`` / ``every 1d`` (also ``s`` and ``w``), counted from the
  job's creation, so its runs stay on one grid whatever delays a run;
- a one-shot: ``in 30m`` or, as Hermes writes it, ``30m`` (from now), or an ISO time (``2026-11-25T09:00``; without an offset it is
  in the configured zone).

Daylight saving: a time the clocks skip (02:30 on a spring-forward night) runs at the first instant
after the jump, and a time the clocks repeat (01:30 on a fall-back night) runs once, at its first
occurrence, unless the hour field repeats by itself (``*`` or a step), whose runs follow real time
through both occurrences. That is Vixie cron's rule, and what a person who wrote "every day at
01:30" expects.
"""

from __future__ import annotations

import enum
import re
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import attrs
from croniter import croniter

__all__ = ["Schedule", "ScheduleError", "ScheduleKind", "parse_schedule"]

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DURATION = re.compile(r"^(?P<count>\d+)\s*(?P<unit>[smhdw])$")
#: The shortest interval a job may repeat at (a job runs a whole agent turn).
MIN_INTERVAL_SECONDS = 60


class ScheduleError(ValueError):
    """A schedule that is none of the three forms; the message says what each looks like."""


class ScheduleKind(enum.Enum):
    """The three forms of a schedule."""

    CRON = "cron"
    INTERVAL = "interval"
    ONCE = "once"


@attrs.frozen
class Schedule:
    """A parsed schedule. Times are aware datetimes; ``next_after`` answers in UTC.

    Attributes:
        kind: which form.
        text: the schedule as the user wrote it (shown back by ``cron list``).
        expression: the cron expression (``CRON``).
        every: the interval in seconds (``INTERVAL``).
        at: the one time it runs (``ONCE``), in UTC.
    """

    kind: ScheduleKind
    text: str
    expression: str | None = None
    every: int | None = None
    at: datetime | None = None

    def next_after(self, after: datetime, zone: ZoneInfo, anchor: datetime) -> datetime | None:
        """The first run strictly after ``after`` (None: a one-shot already past).

        ``anchor`` is where an interval's grid starts (the job's creation).
        """
        if self.kind is ScheduleKind.ONCE:
            assert self.at is not None
            return self.at if self.at > after else None
        if self.kind is ScheduleKind.INTERVAL:
            assert self.every is not None
            steps = max(0, int((after - anchor).total_seconds() // self.every) + 1)
            return (anchor + timedelta(seconds=self.every * steps)).astimezone(timezone.utc)
        assert self.expression is not None
        runs = croniter(self.expression, after.astimezone(zone))
        repeats_hourly = _hour_repeats(self.expression)
        while True:
            candidate: datetime = runs.get_next(datetime)
            # The second occurrence of a repeated wall-clock time runs only for hour-repeating jobs.
            if candidate.fold == 1 and not repeats_hourly and _is_repeated(candidate):
                continue
            return candidate.astimezone(timezone.utc)


def _hour_repeats(expression: str) -> bool:
    hour = expression.split()[1]
    return hour == "*" or "/" in hour


def _is_repeated(moment: datetime) -> bool:
    """Whether this wall-clock time also happened an hour earlier (the fall-back hour)."""
    return moment.replace(fold=0).utcoffset() != moment.replace(fold=1).utcoffset()


def parse_schedule(text: str, now: datetime, zone: ZoneInfo) -> Schedule:
    """Read a schedule (see the module's docstring); ``now`` (aware) anchors ``in 30m``.

    Raises:
        ScheduleError: none of the forms, an interval under a minute, or a one-shot in the past.
    """
    cleaned = " ".join(text.split())
    lowered = cleaned.lower()
    if lowered.startswith("every "):
        seconds = _duration(lowered.removeprefix("every "), cleaned)
        if seconds < MIN_INTERVAL_SECONDS:
            raise ScheduleError(f"{cleaned!r}: an interval must be at least {MIN_INTERVAL_SECONDS} s")
        return Schedule(ScheduleKind.INTERVAL, cleaned, every=seconds)
    if lowered.startswith("in ") or _DURATION.fullmatch(lowered):  # Hermes's bare '30m' is a delay too
        at = now + timedelta(seconds=_duration(lowered.removeprefix("in "), cleaned))
        return Schedule(ScheduleKind.ONCE, cleaned, at=at.astimezone(timezone.utc))
    if len(cleaned.split()) == 5:
        if not croniter.is_valid(cleaned):
            raise ScheduleError(f"{cleaned!r} is not a valid cron expression (minute hour day month weekday)")
        return Schedule(ScheduleKind.CRON, cleaned, expression=cleaned)
    try:
        at = datetime.fromisoformat(cleaned)
    except ValueError:
        raise ScheduleError(
            f"{text!r} is not a schedule: use a cron expression ('0 9 * * 1-5'), an interval ('every 2h'), "
            "a delay ('in 30m') or an ISO time ('2026-11-25T09:00')"
        ) from None
    if at.tzinfo is None:
        at = at.replace(tzinfo=zone)
    if at <= now:
        raise ScheduleError(f"{cleaned!r} is in the past")
    return Schedule(ScheduleKind.ONCE, cleaned, at=at.astimezone(timezone.utc))


def _duration(text: str, whole: str) -> int:
    match = _DURATION.match(text.strip())
    if match is None:
        raise ScheduleError(f"{whole!r}: a duration is a number and a unit (s, m, h, d or w), e.g. '30m'")
    return int(match["count"]) * _UNITS[match["unit"]]
