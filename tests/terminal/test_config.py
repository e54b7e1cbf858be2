"""The terminal, approvals and web configuration sections validate their values."""

from __future__ import annotations

from pathlib import Path

import pytest

from config.errors import ConfigError
from config.loader import load_config
from config.terminal import ApprovalsConfig, BackgroundConfig, TerminalConfig, WebConfig


class TestDefaults:
    """Defaults are the specification's numbers."""

    def test_values(self) -> None:
        terminal = TerminalConfig()
        assert (terminal.timeout, terminal.max_foreground_timeout) == (180.0, 600.0)
        background = terminal.background
        assert (background.max_tracked, background.buffer_chars, background.finished_ttl_seconds) == (64, 200_000, 1800.0)
        assert (background.watch_window_seconds, background.watch_max_lines, background.watch_max_chars) == (15.0, 20, 2000)
        assert (background.breaker_max_events, background.breaker_window_seconds, background.breaker_silence_seconds) == (15, 10.0, 30.0)
        assert (ApprovalsConfig().timeout, ApprovalsConfig().deny) == (60.0, ())  # Hermes 0.19.0's timeout
        assert WebConfig().backend == "auto"


class TestValidation:
    """A bad value is an error at construction, naming the field."""

    @pytest.mark.parametrize(
        ("factory", "kwargs", "field"),
        [
            (TerminalConfig, {"timeout": 0}, "timeout"),
            (TerminalConfig, {"kill_grace_seconds": -1}, "kill_grace_seconds"),
            (TerminalConfig, {"max_output_bytes": 10}, "max_output_bytes"),
            (TerminalConfig, {"env_passthrough": ("OK", 3)}, "env_passthrough"),
            (BackgroundConfig, {"max_tracked": 0}, "max_tracked"),
            (ApprovalsConfig, {"timeout_seconds": True}, "timeout_seconds"),
            (ApprovalsConfig, {"deny": "git push *"}, "deny"),
            (ApprovalsConfig, {"deny": ["git push *", ""]}, "deny"),
            (WebConfig, {"backend": "google"}, "backend"),
        ],
    )
    def test_rejected(self, factory: type, kwargs: dict, field: str) -> None:
        with pytest.raises((ValueError, TypeError)) as info:
            factory(**kwargs)
        assert field in str(info.value)


class TestDenyRules:
    """``approvals.deny`` loads as a list of globs; a bad value is a config error naming the key."""

    def test_loaded(self, tmp_path: Path) -> None:
        (tmp_path / "config.yaml").write_text("approvals:\n  deny:\n    - 'git push *'\n    - ' rm -rf * '\n")
        assert load_config(tmp_path).approvals.deny == ("git push *", "rm -rf *")

    @pytest.mark.parametrize(
        ("yaml_text", "message"),
        [
            ("approvals:\n  deny: 'git push *'\n", "expected a list of strings, got str"),
            ("approvals:\n  deny: [3]\n", "expected a list of strings, got int"),
            ("approvals:\n  deny: ['']\n", "non-empty glob strings"),
        ],
    )
    def test_bad_values_are_errors(self, tmp_path: Path, yaml_text: str, message: str) -> None:
        (tmp_path / "config.yaml").write_text(yaml_text)
        with pytest.raises(ConfigError) as info:
            load_config(tmp_path)
        assert message in str(info.value) and "deny" in str(info.value)


class TestHermesNames:
    """Hermes's ``terminal.timeout`` is read from config.yaml; the old name still works, with a warning."""

    def test_new_name(self, tmp_path: Path) -> None:
        (tmp_path / "config.yaml").write_text("terminal:\n  timeout: 45\n  env_passthrough: [MY_KEY]\n")
        terminal = load_config(tmp_path).terminal
        assert (terminal.timeout, terminal.env_passthrough) == (45.0, ("MY_KEY",))

    def test_default_above_the_foreground_cap_loads(self, tmp_path: Path) -> None:
        """As in Hermes, max_foreground_timeout bounds what the model asks for, not the configured default."""
        (tmp_path / "config.yaml").write_text("terminal:\n  timeout: 900\n")
        assert load_config(tmp_path).terminal.timeout == 900.0

    def test_deprecated_name_moves_with_a_warning(self, tmp_path: Path) -> None:
        (tmp_path / "config.yaml").write_text("terminal:\n  default_timeout: 40\n")
        warnings: list[str] = []
        config = load_config(tmp_path, warnings=warnings, log_warnings=False)
        assert config.terminal.timeout == 40.0
        assert warnings == [
            "deprecated key terminal.default_timeout: use terminal.timeout (read as terminal.timeout this time)"
        ]
