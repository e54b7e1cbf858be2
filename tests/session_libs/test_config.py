"""Session configuration sections: seed defaults and validation."""

from __future__ import annotations

from pathlib import Path

import pytest

from config.loader import ConfigError, load_config
from config.session import AgentConfig, CompressionConfig, DisplayConfig, GuardrailsConfig


class TestDefaults:
    """Defaults are the seeds' numbers."""

    def test_values(self) -> None:
        assert AgentConfig() == AgentConfig(max_turns=90, turn_time_budget_seconds=None, turn_token_budget=None)
        compression = CompressionConfig()
        assert (compression.enabled, compression.threshold, compression.protect_first_n, compression.target_ratio) == (True, 0.5, 3, 0.2)
        guard = GuardrailsConfig()
        assert not guard.hard_stop_enabled
        assert (guard.warn_after.exact_failure, guard.hard_stop_after.exact_failure) == (2, 5)
        assert (guard.warn_after.same_tool_failure, guard.hard_stop_after.same_tool_failure) == (3, 8)
        assert (guard.warn_after.idempotent_no_progress, guard.hard_stop_after.idempotent_no_progress) == (2, 5)
        assert guard.warnings_enabled and guard.non_interactive_hard_stop_enabled
        assert DisplayConfig() == DisplayConfig(busy_input_mode="interrupt", interrupt_demoted_while_busy=False)


class TestValidation:
    """A bad value is an error at construction."""

    @pytest.mark.parametrize(
        ("cls", "kwargs"),
        [
            (AgentConfig, {"max_turns": 0}),
            (AgentConfig, {"turn_time_budget_seconds": -1}),
            (CompressionConfig, {"threshold": 1.5}),
            (CompressionConfig, {"target_ratio": 0.0}),
            (CompressionConfig, {"summary_min_tokens": 5000, "summary_max_tokens": 100}),
            (GuardrailsConfig, {"hard_stop_enabled": "yes"}),
            (DisplayConfig, {"busy_input_mode": "shout"}),
        ],
    )
    def test_rejected(self, cls: type, kwargs: dict) -> None:
        with pytest.raises((ValueError, TypeError)):
            cls(**kwargs)


class TestYaml:
    """The sections load from config.yaml under their yaml keys; bad values name the key."""

    def test_loaded(self, tmp_path: Path) -> None:
        (tmp_path / "config.yaml").write_text(
            "agent: {max_turns: 40, turn_time_budget_seconds: 30}\n"
            "compression: {threshold: 0.6, protect_first_n: 2}\n"
            "tool_loop_guardrails: {hard_stop_enabled: true}\n"
            "display: {busy_input_mode: steer}\n"
        )
        config = load_config(tmp_path)
        assert config.agent == AgentConfig(max_turns=40, turn_time_budget_seconds=30)
        assert (config.compression.threshold, config.compression.protect_first_n) == (0.6, 2)
        assert config.tool_loop_guardrails.hard_stop_enabled
        assert config.display.busy_input_mode == "steer"

    @pytest.mark.parametrize(
        ("yaml_text", "key"),
        [
            ("compression: {threshold: 2.0}", "threshold"),
            ("display: {busy_input_mode: shout}", "busy_input_mode"),
            ("agent: {max_turns: -3}", "max_turns"),
        ],
    )
    def test_bad_value_names_key(self, tmp_path: Path, yaml_text: str, key: str) -> None:
        (tmp_path / "config.yaml").write_text(yaml_text + "\n")
        with pytest.raises(ConfigError, match=key):
            load_config(tmp_path)
