"""The user's time zone: HERMES_TIMEZONE, the timezone key, TZ, the system's, else UTC."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from config.errors import ConfigError
from config.loader import load_config
from config.timezone import user_zone


class TestResolution:
    """Hermes's sources first, then the system's."""

    def test_hermes_variable_then_key_then_tz(self, tmp_path: Path) -> None:
        none = str(tmp_path / "none")
        both = {"HERMES_TIMEZONE": "Asia/Kolkata", "TZ": "Asia/Tokyo"}
        assert user_zone("Europe/Berlin", both, none).key == "Asia/Kolkata"
        assert user_zone("Europe/Berlin", {"TZ": "Asia/Tokyo"}, none).key == "Europe/Berlin"
        assert user_zone(None, {"TZ": ":Europe/Paris"}, none).key == "Europe/Paris"

    def test_a_bad_variable_is_passed_over(self, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
        assert user_zone("Europe/Berlin", {"HERMES_TIMEZONE": "Mars/Base"}, str(tmp_path / "none")).key == "Europe/Berlin"
        assert "HERMES_TIMEZONE='Mars/Base' is not an IANA time zone" in caplog.text

    def test_the_systems_link(self, tmp_path: Path) -> None:
        link = tmp_path / "localtime"
        os.symlink("/usr/share/zoneinfo/America/New_York", link)
        assert user_zone(None, {}, str(link)).key == "America/New_York"

    def test_unknown_is_utc(self, tmp_path: Path) -> None:
        assert user_zone(None, {"TZ": "Mars/Olympus_Mons"}, str(tmp_path / "none")).key == "UTC"
        assert user_zone(None, {}, str(tmp_path / "none")).key == "UTC"


class TestKey:
    """``timezone`` in config.yaml is Hermes's key; a name that is no zone is an error naming it."""

    def test_read(self, tmp_path: Path) -> None:
        (tmp_path / "config.yaml").write_text("timezone: Asia/Kolkata\n")
        assert load_config(tmp_path, log_warnings=False).timezone == "Asia/Kolkata"

    def test_hermes_blank_is_unset(self, tmp_path: Path) -> None:
        (tmp_path / "config.yaml").write_text("timezone: ''\n")
        assert load_config(tmp_path, log_warnings=False).timezone is None

    def test_a_bad_name_is_an_error(self, tmp_path: Path) -> None:
        (tmp_path / "config.yaml").write_text("timezone: Mars/Base\n")
        with pytest.raises(ConfigError, match="timezone 'Mars/Base' is not an IANA time zone"):
            load_config(tmp_path, log_warnings=False)
