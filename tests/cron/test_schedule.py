"""Schedules: the three forms, their errors, and daylight saving in the user's zone."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from actors.platform.cron import ScheduleError, ScheduleKind, parse_schedule

BERLIN = ZoneInfo("Europe/Berlin")
NEW_YORK = ZoneInfo("America/New_York")
UTC = timezone.utc


def _runs(text: str, start: datetime, zone: ZoneInfo, count: int) -> list[datetime]:
    schedule = parse_schedule(text, start, zone)
    found, after = [], start
    for _ in range(count):
        after = schedule.next_after(after, zone, anchor=start)
        assert after is not None
        found.append(after)
    return found


class TestForms:
    """Each form parses into its kind; the next run follows from it."""

    def test_cron_weekdays_at_nine_local(self) -> None:
        friday_noon = datetime(2026, 11, 27, 12, 0, tzinfo=BERLIN)
        runs = _runs("0 9 * * 1-5", friday_noon, BERLIN, 2)
        assert [r.astimezone(BERLIN).strftime("%a %H:%M") for r in runs] == ["Mon 09:00", "Tue 09:00"]
        assert runs[0].tzinfo is UTC

    def test_an_interval_keeps_its_grid(self) -> None:
        created = datetime(2026, 11, 24, 10, 0, tzinfo=UTC)
        schedule = parse_schedule("every 2h", created, BERLIN)
        assert schedule.kind is ScheduleKind.INTERVAL and schedule.every == 7200
        late = created + timedelta(hours=5, minutes=17)  # a run that finished late
        assert schedule.next_after(late, BERLIN, anchor=created) == created + timedelta(hours=6)

    def test_one_shots(self) -> None:
        now = datetime(2026, 11, 24, 10, 0, tzinfo=UTC)
        delay = parse_schedule("in 30m", now, BERLIN)
        assert delay.kind is ScheduleKind.ONCE and delay.at == now + timedelta(minutes=30)
        assert delay.next_after(now, BERLIN, anchor=now) == delay.at
        assert delay.next_after(delay.at, BERLIN, anchor=now) is None  # ran: never again
        local = parse_schedule("2026-11-25T09:00", now, BERLIN)
        assert local.at == datetime(2026, 11, 25, 8, 0, tzinfo=UTC)  # 09:00 in Berlin (CET)

    @pytest.mark.parametrize(
        ("text", "message"),
        [
            ("every 30s", "at least 60 s"),
            ("every fortnight", "a number and a unit"),
            ("in 3 parsecs", "a number and a unit"),
            ("61 9 * * *", "not a valid cron expression"),
            ("2020-01-01T00:00", "in the past"),
            ("tomorrow-ish", "use a cron expression"),
        ],
    )
    def test_errors_say_what_is_wrong(self, text: str, message: str) -> None:
        with pytest.raises(ScheduleError, match=message):
            parse_schedule(text, datetime(2026, 11, 24, tzinfo=UTC), BERLIN)


class TestDaylightSaving:
    """Skipped times run after the jump; repeated times run once unless the hour field repeats."""

    def test_a_skipped_time_runs_after_the_jump(self) -> None:
        # Berlin, 2026-03-29: 02:00 CET becomes 03:00 CEST, so 02:30 does not exist that night.
        runs = _runs("30 2 * * *", datetime(2026, 3, 28, 12, 0, tzinfo=BERLIN), BERLIN, 3)
        assert [r.astimezone(BERLIN).strftime("%d %H:%M %Z") for r in runs] == [
            "29 03:00 CEST", "30 02:30 CEST", "31 02:30 CEST",
        ]

    def test_a_repeated_time_runs_once(self) -> None:
        # New York, 2026-11-01: 02:00 EDT becomes 01:00 EST, so 01:30 happens twice.
        runs = _runs("30 1 * * *", datetime(2026, 10, 31, 12, 0, tzinfo=NEW_YORK), NEW_YORK, 2)
        assert [r.astimezone(NEW_YORK).strftime("%d %H:%M %Z") for r in runs] == ["01 01:30 EDT", "02 01:30 EST"]

    def test_an_hour_repeating_job_follows_real_time(self) -> None:
        runs = _runs("*/30 * * * *", datetime(2026, 11, 1, 0, 50, tzinfo=NEW_YORK), NEW_YORK, 5)
        gaps = {later - earlier for earlier, later in zip(runs, runs[1:])}
        assert gaps == {timedelta(minutes=30)}  # through both 01:00-02:00 hours, no gap, no double
