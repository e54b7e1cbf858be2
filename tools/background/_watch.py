"""Rate limits of ``watch_patterns`` notifications.

A watched process that matches on every line must not flood the agent with wake-ups:

- per process, at most one notification per window (15 s); the matched lines it carries
  are capped (20 lines / 2,000 characters);
- matches arriving inside a window are suppressed (and counted in the next notification);
  after 3 consecutive windows that suppressed something, the watch is disabled and the
  process falls back to a single notification when it exits; so it is after 8 notifications
  over the process's life (Hermes's cap: a pattern recurring just above the window never strikes);
- over all processes of a session, a breaker: more than 15 notifications within 10 s opens
  it and everything is dropped for 30 s.

Times are plain floats from ``trio.current_time()`` passed in by the caller, so these
classes are pure and testable with any clock.
"""

from __future__ import annotations

from collections import deque

import attrs

from config.terminal import BackgroundConfig

__all__ = ["WatchBreaker", "WatchMatch", "WatchMatcher"]


@attrs.frozen
class WatchMatch:
    """What a watch notification carries: the matched lines and how many earlier ones were suppressed."""

    lines: tuple[str, ...]
    text: str
    suppressed: int
    truncated: bool


class WatchBreaker:
    """Session-wide breaker over watch notifications of every background process."""

    def __init__(self, config: BackgroundConfig) -> None:
        self._max_events = config.breaker_max_events
        self._window = config.breaker_window_seconds
        self._silence = config.breaker_silence_seconds
        self._events: deque[float] = deque()
        self._silent_until = float("-inf")
        self.dropped = 0
        """Notifications dropped while the breaker was open."""
        self.trips = 0

    def is_open(self, now: float) -> bool:
        """True while notifications are being silenced."""
        return now < self._silent_until

    def allow(self, now: float) -> bool:
        """Record one notification at ``now``; False when it must be dropped."""
        if self.is_open(now):
            self.dropped += 1
            return False
        while self._events and self._events[0] <= now - self._window:
            self._events.popleft()
        if len(self._events) >= self._max_events:
            self._events.clear()
            self._silent_until = now + self._silence
            self.trips += 1
            self.dropped += 1
            return False
        self._events.append(now)
        return True


class WatchMatcher:
    """Per-process watch state: which lines match and whether a notification may go out now."""

    def __init__(self, patterns: tuple[str, ...], config: BackgroundConfig) -> None:
        self.patterns = patterns
        self._window = config.watch_window_seconds
        self._max_lines = config.watch_max_lines
        self._max_chars = config.watch_max_chars
        self._max_suppressed_windows = config.watch_max_suppressed_windows
        self._hits_left = config.watch_max_hits
        self._window_started: float | None = None
        self._window_suppressed = False
        self._consecutive_suppressed_windows = 0
        self._suppressed = 0
        self.disabled = not patterns
        """True once the watch gave up (too noisy) or when there was nothing to watch."""

    def matching(self, lines: list[str]) -> list[str]:
        """The lines containing any watched substring."""
        if self.disabled:
            return []
        return [line for line in lines if any(pattern in line for pattern in self.patterns)]

    def offer(self, matched: list[str], now: float) -> WatchMatch | None:
        """Decide what to do with freshly matched lines at ``now``.

        Returns the notification payload to send, or None when the lines were suppressed
        (check ``disabled`` afterwards: the watch may just have given up, after this payload too).
        """
        if self.disabled or not matched:
            return None
        if self._window_started is not None and now < self._window_started + self._window:
            self._suppressed += len(matched)
            if not self._window_suppressed:
                self._window_suppressed = True
                self._consecutive_suppressed_windows += 1
                if self._consecutive_suppressed_windows >= self._max_suppressed_windows:
                    self.disabled = True
            return None
        if not self._window_suppressed:
            self._consecutive_suppressed_windows = 0
        self._window_started = now
        self._window_suppressed = False
        suppressed, self._suppressed = self._suppressed, 0
        self._hits_left -= 1
        self.disabled = self._hits_left <= 0
        return self._cap(matched, suppressed)

    def _cap(self, matched: list[str], suppressed: int) -> WatchMatch:
        kept: list[str] = []
        used = 0
        for line in matched[: self._max_lines]:
            room = self._max_chars - used
            if room <= 0:
                break
            piece = line[:room]
            kept.append(piece)
            used += len(piece) + 1
        truncated = len(kept) < len(matched) or any(len(a) != len(b) for a, b in zip(kept, matched))
        return WatchMatch(lines=tuple(kept), text="\n".join(kept), suppressed=suppressed, truncated=truncated)
