"""Jittered exponential backoff between retries of a provider call.

The delay doubles from ``base_delay`` up to ``max_delay``; a random jitter of up
to ``jitter_ratio`` of it is added so that many sessions failing together do
not retry together. Each ``Backoff`` seeds its generator from the clock mixed
with its own call counter, so even two schedules created in the same
nanosecond draw different jitter.
"""

from __future__ import annotations

import random
import time

import attrs

from config.recovery import RetryConfig

_GOLDEN = 0x9E3779B9  # golden-ratio constant: spreads consecutive counters over the seed space


def backoff_delay(attempt: int, *, base_delay: float, max_delay: float, jitter_ratio: float, rng: random.Random) -> float:
    """The delay before retry number ``attempt`` (1-based), jitter included.

    Raises:
        ValueError: ``attempt`` is below 1.
    """
    if attempt < 1:
        raise ValueError(f"attempt must be >= 1, got {attempt}")
    # Cap the exponent too: 2 ** 1000 would be a float overflow long before min() helps.
    delay = min(base_delay * (2 ** min(attempt - 1, 62)), max_delay)
    return delay + rng.uniform(0.0, jitter_ratio * delay)


@attrs.define
class Backoff:
    """A backoff schedule for one retry loop (not shared between sessions).

    Attributes:
        config: the ``retry`` settings.
        seed: a fixed seed for tests; ``None`` seeds from the clock.
    """

    config: RetryConfig = attrs.field(factory=RetryConfig)
    seed: int | None = None
    # Invariant: _ticks counts delays handed out, so each one reseeds differently.
    _ticks: int = attrs.field(default=0, init=False)
    # Made at the first delay: most calls never retry, and seeding a Random costs about 0.1 ms.
    _rng: random.Random | None = attrs.field(default=None, init=False)

    def delay(self, attempt: int, *, retry_after: float | None = None) -> float:
        """Seconds to wait before retry ``attempt``; a provider's ``retry_after`` is honoured up to ``max_delay``."""
        self._ticks += 1
        if self._rng is None:
            self._rng = random.Random(self.seed)
        if self.seed is None:
            self._rng.seed((time.time_ns() ^ (self._ticks * _GOLDEN)) & 0xFFFFFFFF)
        delay = backoff_delay(
            attempt,
            base_delay=self.config.base_delay,
            max_delay=self.config.max_delay,
            jitter_ratio=self.config.jitter_ratio,
            rng=self._rng,
        )
        if retry_after is not None:
            delay = max(delay, min(retry_after, self.config.max_delay))
        return delay
