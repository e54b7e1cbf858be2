"""watch_patterns rate limits, on explicit timestamps."""

from __future__ import annotations

from config.terminal import BackgroundConfig
from tools.background import WatchBreaker, WatchMatcher

CONFIG = BackgroundConfig()


class TestWatchMatcher:
    """One notification per 15 s window, capped, and disabled after 3 suppressed windows."""

    def test_substring_match_per_line(self) -> None:
        matcher = WatchMatcher(("ERROR", "ready"), CONFIG)
        assert matcher.matching(["ok", "an ERROR here", "server ready", "Error"]) == ["an ERROR here", "server ready"]

    def test_one_notification_per_window(self) -> None:
        matcher = WatchMatcher(("x",), CONFIG)
        first = matcher.offer(["x1"], now=0.0)
        assert first is not None and first.lines == ("x1",)
        assert matcher.offer(["x2", "x3"], now=5.0) is None
        second = matcher.offer(["x4"], now=15.0)
        assert second is not None and second.suppressed == 2

    def test_match_capped_at_20_lines_and_2000_chars(self) -> None:
        matcher = WatchMatcher(("x",), CONFIG)
        many = matcher.offer([f"x{i}" for i in range(50)], now=0.0)
        assert many is not None and len(many.lines) == 20 and many.truncated
        matcher = WatchMatcher(("x",), CONFIG)
        long = matcher.offer(["x" * 1500, "x" * 1500], now=0.0)
        assert long is not None and len(long.text) <= 2000 and long.truncated

    def test_disabled_after_three_consecutive_suppressed_windows(self) -> None:
        matcher = WatchMatcher(("x",), CONFIG)
        for window in range(2):
            start = window * 15.0
            assert matcher.offer(["x"], now=start) is not None
            assert matcher.offer(["x"], now=start + 1) is None
            assert not matcher.disabled
        assert matcher.offer(["x"], now=30.0) is not None
        assert matcher.offer(["x"], now=31.0) is None
        assert matcher.disabled
        assert matcher.matching(["x"]) == []

    def test_quiet_window_resets_the_count(self) -> None:
        matcher = WatchMatcher(("x",), CONFIG)
        assert matcher.offer(["x"], now=0.0) is not None
        assert matcher.offer(["x"], now=1.0) is None  # window 1 suppressed
        assert matcher.offer(["x"], now=15.0) is not None
        assert matcher.offer(["x"], now=16.0) is None  # window 2 suppressed
        assert matcher.offer(["x"], now=30.0) is not None  # window 3 quiet
        assert matcher.offer(["x"], now=60.0) is not None  # count reset here
        assert matcher.offer(["x"], now=61.0) is None
        assert not matcher.disabled


class TestWatchBreaker:
    """More than 15 events in 10 s silences everything for 30 s."""

    def test_trips_and_recovers(self) -> None:
        breaker = WatchBreaker(CONFIG)
        assert all(breaker.allow(now=i * 0.1) for i in range(15))
        assert not breaker.allow(now=1.6)
        assert breaker.trips == 1
        assert not breaker.allow(now=31.0)
        assert breaker.allow(now=31.7)
        assert breaker.dropped == 2

    def test_sliding_window(self) -> None:
        breaker = WatchBreaker(CONFIG)
        assert all(breaker.allow(now=float(i)) for i in range(40))
        assert breaker.trips == 0
