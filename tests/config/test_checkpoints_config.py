"""The ``checkpoints`` section as a Hermes user writes it: its switch, its caps, and the keys not built here."""

from __future__ import annotations

from pathlib import Path

import pytest

from config.checkpoints import CheckpointsConfig
from config.errors import ConfigError
from config.loader import load_config


def _load(home: Path, text: str) -> tuple[CheckpointsConfig, list[str]]:
    (home / "config.yaml").write_text(text, encoding="utf-8")
    found: list[str] = []
    return load_config(home, warnings=found, log_warnings=False).checkpoints, found


class TestCheckpointsSection:
    """Off by default; Hermes's spellings and caps are read; its pruning keys are named as not built."""

    def test_off_by_default(self, tmp_path: Path) -> None:
        """No section: checkpoints are off, with Hermes's caps."""
        section, found = _load(tmp_path, "")
        assert (False, 20, 500, 10, []) == (
            section.enabled, section.max_snapshots, section.max_total_size_mb, section.max_file_size_mb, found,
        )

    @pytest.mark.parametrize("text", ["checkpoints: true\n", "checkpoints:\n  enabled: true\n"])
    def test_the_switch(self, tmp_path: Path, text: str) -> None:
        """``checkpoints: true`` (Hermes's short form) and ``enabled: true`` both turn them on, silently."""
        section, found = _load(tmp_path, text)
        assert (True, []) == (section.enabled, found)

    def test_pruning_keys_are_hermes_settings_not_built(self, tmp_path: Path) -> None:
        """retention_days is told apart from a typo: a Hermes setting, with what covers it."""
        _, found = _load(tmp_path, "checkpoints:\n  enabled: true\n  retention_days: 3\n")
        assert 1 == len(found) and "Hermes setting checkpoints.retention_days" in found[0]
        assert "checkpoints.max_snapshots" in found[0]

    def test_a_negative_cap_is_refused(self, tmp_path: Path) -> None:
        """A cap below 0 is a ConfigError naming the key."""
        with pytest.raises(ConfigError, match="max_file_size_mb"):
            _load(tmp_path, "checkpoints:\n  max_file_size_mb: -1\n")
