"""config.yaml: defaults, strict values, clear errors, unknown keys as warnings."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from config.loader import Config, ConfigError, home_dir, load_config, load_env_file


def write(home: Path, text: str) -> None:
    (home / "config.yaml").write_text(text, encoding="utf-8")


class TestLoadConfig:
    """Reading config.yaml into typed sections."""

    def test_missing_file_means_defaults(self, tmp_path: Path) -> None:
        """No file: the seeds' defaults."""
        config = load_config(tmp_path)
        assert config == Config()
        assert config.agent.max_turns == 90
        assert config.code_execution.timeout == 300
        assert config.delegation.max_concurrent_children == 3
        assert config.display.busy_input_mode == "interrupt"

    def test_values_are_read_by_hermes_key_names(self, tmp_path: Path) -> None:
        """Hermes Agent's key names set the matching fields."""
        write(tmp_path, "agent:\n  max_turns: 12\ncode_execution:\n  timeout: 60\n  max_tool_calls: 5\n"
                        "delegation:\n  max_spawn_depth: 2\nfallback_providers:\n  - provider: openrouter\n    model: m\n")
        config = load_config(tmp_path)
        assert (config.agent.max_turns, config.code_execution.timeout, config.code_execution.max_tool_calls) == (12, 60, 5)
        assert config.delegation.max_spawn_depth == 2
        assert config.fallback_providers[0].provider == "openrouter"

    def test_hosts_auto_in_the_file_is_one_per_core(self, tmp_path: Path) -> None:
        """``daemon.hosts: auto`` in config.yaml starts a daemon with one host per core; a count is read as it is."""
        write(tmp_path, "daemon:\n  hosts: auto\n")
        assert load_config(tmp_path).daemon.hosts == max(1, os.cpu_count() or 1)
        write(tmp_path, "daemon:\n  hosts: 3\n")
        assert load_config(tmp_path).daemon.hosts == 3

    def test_unknown_keys_warn_and_are_ignored(self, tmp_path: Path) -> None:
        """Unknown keys at any depth are reported, not fatal."""
        write(tmp_path, "agent:\n  max_turns: 7\n  colour: red\nmystery: 1\n")
        warnings: list[str] = []
        config = load_config(tmp_path, warnings=warnings)
        assert config.agent.max_turns == 7
        assert warnings == ["unknown key agent.colour (ignored)", "unknown key mystery (ignored)"]

    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ('agent:\n  max_turns: "12"\n', "expected an integer, got a string @ agent.max_turns"),
            ("agent:\n  max_turns: -1\n", "max_turns must be an integer > 0, got -1 @ agent"),
            ("display:\n  busy_input_mode: wild\n", "'busy_input_mode' must be in ('interrupt', 'queue', 'steer') (got 'wild') @ display"),
            ("compression:\n  enabled: 'false'\n", "expected true or false, got a string @ compression.enabled"),
            ("agent: [1]\n", "agent must be a mapping, got list"),
            ("- 1\n", "the top level must be a mapping"),
            ("fallback_providers:\n  - provider: openai\n", "required field missing @ fallback_providers[0].model"),
            ("delegation:\n  child_timeout_seconds: 5\n", "child_timeout_seconds must be a number >= 30, got 5"),
            ("agent: [\n", "not valid YAML"),
            ("daemon:\n  hosts: many\n", "hosts must be an integer, got 'many' @ daemon"),
            ("daemon:\n  hosts: 0\n", "hosts must be an integer >= 1 and <= 64, got 0 @ daemon"),
            # Hostile files: never a RecursionError or a bare ValueError.
            ("agent: " + "[" * 50_000, "nested too deeply to read"),
            ("agent:\n  max_turns: " + "9" * 5000 + "\n", "holds a number of more than 4300 digits"),
            ("agent:\n  max_turns: " + "9" * 40 + "\n", "expected an integer that fits in 64 bits"),
            ("mystery: &loop [*loop]\n", "is nested deeper than 100 levels"),
            ("agent: " + "[" * 150 + "]" * 150 + "\n", "is nested deeper than 100 levels"),
        ],
    )
    def test_bad_values_name_key_and_file(self, tmp_path: Path, text: str, expected: str) -> None:
        """A wrong type or value is an error naming the key and the file."""
        write(tmp_path, text)
        with pytest.raises(ConfigError) as caught:
            load_config(tmp_path)
        assert str(tmp_path / "config.yaml") in str(caught.value)
        assert expected in str(caught.value)


class TestEnvironment:
    """HERMES_ACTORS_HOME and the .env file."""

    def test_home_dir_default_and_override(self, tmp_path: Path) -> None:
        """The variable wins; otherwise ~/.hermes-actors (never ~/.hermes)."""
        assert home_dir({"HERMES_ACTORS_HOME": str(tmp_path)}) == tmp_path
        assert home_dir({}).name == ".hermes-actors"

    def test_env_file_parsing(self, tmp_path: Path) -> None:
        """KEY=VALUE lines with comments, export and quotes; junk lines skipped."""
        (tmp_path / ".env").write_text('# keys\nexport OPENAI_API_KEY="sk-test"\nANTHROPIC_API_KEY=abc\nnot a line\n\n')
        assert load_env_file(tmp_path) == {"OPENAI_API_KEY": "sk-test", "ANTHROPIC_API_KEY": "abc"}
        assert load_env_file(tmp_path / "missing") == {}


class TestHostileFile:
    """Bytes that are not UTF-8 are a ConfigError naming the file; escaped surrogates are repaired."""

    def test_invalid_utf8(self, tmp_path: Path) -> None:
        """Bytes that are not UTF-8 are refused by position."""
        (tmp_path / "config.yaml").write_bytes(b"model:\n  default: \xff\n")
        with pytest.raises(ConfigError, match=r"config.yaml: not valid UTF-8 \(byte 18\)"):
            load_config(tmp_path)

    def test_surrogate_escape_is_repaired(self, tmp_path: Path) -> None:
        """A YAML escape of a lone surrogate is read as U+FFFD, so nothing downstream fails on it."""
        write(tmp_path, 'model:\n  default: "scripted\\udc80model"\n')
        assert "scripted\ufffdmodel" == load_config(tmp_path).model.default
