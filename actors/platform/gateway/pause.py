"""A platform's "slow down" (a 429, Matrix's ``M_LIMIT_EXCEEDED``, Graph's rate-limit codes) kept for all
of a bot's requests: the server counts per token, so once it says to wait, every request waits."""

from __future__ import annotations

from collections.abc import Callable

import trio

__all__ = ["RatePause", "header_seconds"]


def header_seconds(value: str | None, default: float) -> float:
    """The seconds a ``Retry-After``-like header says (``default`` when it is absent or not a number)."""
    try:
        return max(0.0, float(value)) if value is not None else default
    except ValueError:
        return default


class RatePause:
    """When the platform takes requests again, and what waiting has cost.

    Args:
        clock: Trio's clock, so tests can move it.
    """

    def __init__(self, clock: Callable[[], float] = trio.current_time) -> None:
        self._clock = clock
        self._closed_until = 0.0
        self.rate_limited = 0
        self.waited = 0.0

    async def wait(self) -> None:
        """Sleep until the pause the platform asked for is over."""
        while (delay := self._closed_until - self._clock()) > 0:
            self.waited += delay
            await trio.sleep(delay)

    def close_for(self, delay: float) -> None:
        """The platform said to wait ``delay`` seconds before the next request."""
        self.rate_limited += 1
        self._closed_until = max(self._closed_until, self._clock() + delay)
