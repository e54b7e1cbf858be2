"""The ``hooks`` and ``plugins`` sections read as Hermes writes them, and a bad hook refused clearly."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from config.errors import ConfigError
from config.loader import Config, load_config

HERMES_HOOKS = {
    "hooks": {
        "pre_tool_call": [{"command": "~/.hermes/hooks/no-push.sh", "matcher": " terminal ", "timeout": 10}],
        "on_session_start": [{"command": "notify-send started"}],
        "pre_api_request": [{"command": "log-request"}],
    },
    "plugins": {"enabled": ["hello"], "disabled": ["old"]},
}


def _load(home: Path, data: object) -> tuple[Config, list[str]]:
    home.mkdir(exist_ok=True)
    (home / "config.yaml").write_text(yaml.safe_dump(data))
    warnings: list[str] = []
    return load_config(home, warnings=warnings, log_warnings=False), warnings


class TestHermesHooks:
    """A Hermes user's hooks block loads as it is; events not fired here are reported, not fatal."""

    def test_reads_hermes_entries(self, tmp_path: Path) -> None:
        config, warnings = _load(tmp_path, HERMES_HOOKS)
        (entry,) = config.hooks.pre_tool_call
        assert (entry.command, entry.matcher, entry.timeout, entry.on_error) == ("~/.hermes/hooks/no-push.sh", "terminal", 10, "allow")
        assert config.hooks.on_session_start[0].command == "notify-send started"
        assert config.plugins.enabled == ("hello",) and config.plugins.disabled == ("old",)
        assert any("hooks.pre_api_request" in warning and "not built here" in warning for warning in warnings)

    def test_python_hook(self, tmp_path: Path) -> None:
        config, _ = _load(tmp_path, {"hooks": {"post_tool_call": [{"python": "pkg.mod:audit", "on_error": "block"}]}})
        assert config.hooks.post_tool_call[0].label == "python pkg.mod:audit"


class TestBadHooks:
    """A hook that cannot run as written stops the daemon's start with the key named."""

    @pytest.mark.parametrize(
        ("entry", "message"),
        [
            ({"matcher": "terminal"}, "exactly one of command or python"),
            ({"command": "a", "python": "m:f"}, "exactly one of command or python"),
            ({"python": "no_colon"}, "module:function"),
            ({"command": "a", "timeout": 301}, "timeout"),
            ({"command": "a", "matcher": "("}, "not a regular expression"),
            ({"command": "a", "on_error": "maybe"}, "on_error"),
        ],
    )
    def test_refused(self, tmp_path: Path, entry: dict[str, object], message: str) -> None:
        with pytest.raises(ConfigError, match="hooks") as raised:
            _load(tmp_path, {"hooks": {"pre_tool_call": [entry]}})
        assert message in str(raised.value)

    def test_matcher_only_on_tool_events(self, tmp_path: Path) -> None:
        with pytest.raises(ConfigError, match="only tool events take a matcher"):
            _load(tmp_path, {"hooks": {"on_session_start": [{"command": "a", "matcher": "x"}]}})
