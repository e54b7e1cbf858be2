"""Jittered exponential backoff: base 5 s, cap 120 s, jitter up to half the delay."""

from __future__ import annotations

import random

import pytest

from config.recovery import RetryConfig
from providers.recovery import Backoff, backoff_delay


class TestBackoffDelay:
    """The delay doubles per attempt up to the cap, plus bounded jitter."""

    @pytest.mark.parametrize(("attempt", "base"), [(1, 5.0), (2, 10.0), (3, 20.0), (4, 40.0), (5, 80.0), (6, 120.0), (60, 120.0), (5000, 120.0)])
    def test_range(self, attempt: int, base: float) -> None:
        rng = random.Random(attempt)
        for _ in range(50):
            delay = backoff_delay(attempt, base_delay=5.0, max_delay=120.0, jitter_ratio=0.5, rng=rng)
            assert base <= delay <= base * 1.5

    def test_no_jitter(self) -> None:
        assert 20.0 == backoff_delay(3, base_delay=5.0, max_delay=120.0, jitter_ratio=0.0, rng=random.Random())

    def test_attempt_must_be_positive(self) -> None:
        with pytest.raises(ValueError):
            backoff_delay(0, base_delay=5.0, max_delay=120.0, jitter_ratio=0.5, rng=random.Random())


class TestBackoffSchedule:
    """A schedule uses its config, is reproducible with a seed and decorrelated without one."""

    def test_defaults_from_spec(self) -> None:
        assert RetryConfig() == RetryConfig(max_retries=3, base_delay=5.0, max_delay=120.0, jitter_ratio=0.5)

    def test_seeded_is_reproducible(self) -> None:
        a, b = Backoff(seed=7), Backoff(seed=7)
        assert [a.delay(i) for i in (1, 2, 3)] == [b.delay(i) for i in (1, 2, 3)]

    def test_unseeded_schedules_differ(self) -> None:
        delays = {Backoff().delay(3) for _ in range(20)}
        assert len(delays) > 10

    def test_retry_after_is_honoured_up_to_cap(self) -> None:
        backoff = Backoff(RetryConfig(jitter_ratio=0.0))
        assert 30.0 == backoff.delay(1, retry_after=30.0)
        assert 120.0 == backoff.delay(1, retry_after=10_000.0)
        assert 5.0 == backoff.delay(1, retry_after=1.0)
