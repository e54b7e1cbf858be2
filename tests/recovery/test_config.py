"""The recovery config sections: spec defaults, and bad values are errors."""

from __future__ import annotations

import pytest

from config.recovery import CredentialPoolConfig, FallbackProviderConfig, RetryConfig


class TestRetryConfig:
    """``retry`` validates its numbers."""

    @pytest.mark.parametrize(
        "kwargs",
        [{"max_retries": -1}, {"max_retries": 1.5}, {"base_delay": 0}, {"max_delay": 1.0}, {"jitter_ratio": 2.0}, {"base_delay": True}],
    )
    def test_bad_values_rejected(self, kwargs: dict[str, object]) -> None:
        with pytest.raises((ValueError, TypeError)):
            RetryConfig(**kwargs)  # type: ignore[arg-type]  # deliberately wrong: the refusal is what the test checks


class TestCredentialPoolConfig:
    """``credential_pool`` takes a known strategy and env-variable names."""

    def test_defaults(self) -> None:
        assert CredentialPoolConfig() == CredentialPoolConfig(strategy="fill_first", extra_keys={})

    @pytest.mark.parametrize("kwargs", [{"strategy": "best"}, {"extra_keys": {"openrouter": "KEY2"}}, {"extra_keys": {"x": [""]}}])
    def test_bad_values_rejected(self, kwargs: dict[str, object]) -> None:
        with pytest.raises((ValueError, TypeError)):
            CredentialPoolConfig(**kwargs)  # type: ignore[arg-type]  # deliberately wrong: the refusal is what the test checks


class TestFallbackProviderConfig:
    """A ``fallback_providers`` entry needs a provider and a model; the mode must be known."""

    def test_minimal(self) -> None:
        entry = FallbackProviderConfig(provider="openrouter", model="m")
        assert (entry.base_url, entry.api_mode) == (None, None)

    @pytest.mark.parametrize("kwargs", [{"provider": "", "model": "m"}, {"provider": "p", "model": "m", "api_mode": "grpc"}])
    def test_bad_values_rejected(self, kwargs: dict[str, str]) -> None:
        with pytest.raises((ValueError, TypeError)):
            FallbackProviderConfig(**kwargs)
