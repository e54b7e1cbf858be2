"""Session configuration sections: seed defaults and validation."""

from __future__ import annotations

import pytest

from config.session import AgentConfig, CompressionConfig, DisplayConfig, GuardrailsConfig


class TestDefaults:
    """Defaults are the seeds' numbers."""

    def test_values(self) -> None:
        assert AgentConfig() == AgentConfig(max_turns=90, turn_time_budget_seconds=None, turn_token_budget=None)
        compression = CompressionConfig()
        assert (compression.enabled, compression.threshold, compression.protect_first_n, compression.tail_ratio) == (True, 0.5, 3, 0.2)
        guard = GuardrailsConfig()
        assert not guard.hard_stop_enabled
        assert (guard.exact_failure_warn_after, guard.exact_failure_block_after) == (2, 5)
        assert (guard.same_tool_failure_warn_after, guard.same_tool_failure_halt_after) == (3, 8)
        assert (guard.no_progress_warn_after, guard.no_progress_block_after) == (2, 5)
        assert DisplayConfig() == DisplayConfig(busy_input_mode="interrupt", interrupt_demoted_while_busy=False)


class TestValidation:
    """A bad value is an error at construction."""

    @pytest.mark.parametrize(
        ("cls", "kwargs"),
        [
            (AgentConfig, {"max_turns": 0}),
            (AgentConfig, {"turn_time_budget_seconds": -1}),
            (CompressionConfig, {"threshold": 1.5}),
            (CompressionConfig, {"tail_ratio": 0.0}),
            (CompressionConfig, {"summary_min_tokens": 5000, "summary_max_tokens": 100}),
            (GuardrailsConfig, {"hard_stop_enabled": "yes"}),
            (DisplayConfig, {"busy_input_mode": "shout"}),
        ],
    )
    def test_rejected(self, cls: type, kwargs: dict) -> None:
        with pytest.raises((ValueError, TypeError)):
            cls(**kwargs)
