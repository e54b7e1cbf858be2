"""sandbox.limits: what config.yaml and a session may say of them, and the refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from config.loader import ConfigError, load_config
from config.sandbox import SandboxConfig, SandboxLimits
from tools.jail import SandboxLimitsRefused, resolve_limits


class TestNarrowed:
    """A session's own limits lower the configured ones, never raise them."""

    def test_lower_wins_higher_is_ignored(self) -> None:
        limits = SandboxLimits().narrowed({"pids": 64, "memory_mb": 10**6})
        assert (limits.pids, limits.memory_mb) == (64, SandboxLimits().memory_mb)

    def test_nothing_asked_is_the_configured_limits_themselves(self) -> None:
        configured = SandboxConfig().limits
        assert resolve_limits(None, SandboxConfig(limits=configured)) is configured
        assert configured.narrowed({}) is configured

    def test_unknown_name(self) -> None:
        with pytest.raises(SandboxLimitsRefused, match="unknown sandbox limit 'cpu'"):
            resolve_limits({"cpu": 5}, SandboxConfig())

    def test_value_out_of_range(self) -> None:
        with pytest.raises(SandboxLimitsRefused, match="pids must be an integer >= 16, got 3"):
            resolve_limits({"pids": 3}, SandboxConfig())


class TestConfigFile:
    """sandbox.limits in config.yaml is checked like every other key."""

    def test_read(self, tmp_path: Path) -> None:
        (tmp_path / "config.yaml").write_text("sandbox:\n  limits: {pids: 200, shm_mb: 64}\n")
        limits = load_config(tmp_path).sandbox.limits
        assert (limits.pids, limits.shm_mb, limits.memory_mb) == (200, 64, SandboxLimits().memory_mb)

    def test_bad_value(self, tmp_path: Path) -> None:
        (tmp_path / "config.yaml").write_text("sandbox:\n  limits: {cpu_weight: 0}\n")
        with pytest.raises(ConfigError, match="cpu_weight must be an integer >= 1 and <= 10000, got 0"):
            load_config(tmp_path)

    def test_tools_cpu_weight(self, tmp_path: Path) -> None:
        assert load_config(tmp_path).sandbox.tools_cpu_weight == 10
        (tmp_path / "config.yaml").write_text("sandbox:\n  tools_cpu_weight: 100\n")
        assert load_config(tmp_path).sandbox.tools_cpu_weight == 100
        (tmp_path / "config.yaml").write_text("sandbox:\n  tools_cpu_weight: 0\n")
        with pytest.raises(ConfigError, match="tools_cpu_weight must be an integer >= 1 and <= 10000, got 0"):
            load_config(tmp_path)
