"""What config errors and warnings say: real lines with line/column, warnings to the caller, prices."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from config.loader import ConfigError, load_config
from config.pricing import ModelPrice


def write(home: Path, text: str) -> None:
    (home / "config.yaml").write_text(text, encoding="utf-8")


class TestYamlErrors:
    """A parse error names line and column (1-based) and shows the line with a caret, on real lines."""

    def test_bad_indentation(self, tmp_path: Path) -> None:
        write(tmp_path, "model:\n  default: x\n   provider: openai\n")
        with pytest.raises(ConfigError) as info:
            load_config(tmp_path)
        lines = str(info.value).splitlines()
        assert lines[0] == f"{tmp_path / 'config.yaml'}, line 3, column 12: not valid YAML: mapping values are not allowed here"
        assert lines[1:] == ["     provider: openai", "             ^"]

    def test_unclosed_flow(self, tmp_path: Path) -> None:
        write(tmp_path, "model: {default: x\nretry: 2\n")
        with pytest.raises(ConfigError) as info:
            load_config(tmp_path)
        assert ", line 2, column 6: not valid YAML:" in str(info.value)
        assert "\\n" not in str(info.value)


class TestWarnings:
    """Unknown keys reach the caller; the log is spared when the caller shows them itself."""

    def test_returned(self, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
        write(tmp_path, "modle: {}\nretry:\n  max_retires: 3\n")
        found: list[str] = []
        with caplog.at_level(logging.WARNING, logger="hermes_actors.config"):
            load_config(tmp_path, warnings=found, log_warnings=False)
        assert found == [
            "unknown key modle (ignored): did you mean model?",
            "unknown key retry.max_retires (ignored): did you mean retry.max_retries?",
        ]
        assert caplog.records == []


class TestPricingSection:
    """pricing: maps model ids to per-million prices; bad prices are refused with the key."""

    def test_prices(self, tmp_path: Path) -> None:
        write(tmp_path, "pricing:\n  my/model: {input: 3, output: 12.5, cache_read: 0.3}\n")
        assert load_config(tmp_path).pricing == {"my/model": ModelPrice(input=3.0, output=12.5, cache_read=0.3)}

    def test_negative_price(self, tmp_path: Path) -> None:
        write(tmp_path, "pricing:\n  m: {input: -1, output: 2}\n")
        with pytest.raises(ConfigError, match=r"input must be a number >= 0.*pricing\['m'\]"):
            load_config(tmp_path)

    def test_missing_output(self, tmp_path: Path) -> None:
        write(tmp_path, "pricing:\n  m: {input: 1}\n")
        with pytest.raises(ConfigError, match="output"):
            load_config(tmp_path)
