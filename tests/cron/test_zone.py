"""The user's time zone: TZ, else the system's, else UTC."""

from __future__ import annotations

import os
from pathlib import Path

from actors.platform.cron.zone import local_zone


def test_tz_wins(tmp_path: Path) -> None:
    assert local_zone({"TZ": "Asia/Tokyo"}, str(tmp_path / "none")).key == "Asia/Tokyo"
    assert local_zone({"TZ": ":Europe/Paris"}, str(tmp_path / "none")).key == "Europe/Paris"


def test_the_systems_link(tmp_path: Path) -> None:
    link = tmp_path / "localtime"
    os.symlink("/usr/share/zoneinfo/America/New_York", link)
    assert local_zone({}, str(link)).key == "America/New_York"


def test_unknown_is_utc(tmp_path: Path) -> None:
    assert local_zone({"TZ": "Mars/Olympus_Mons"}, str(tmp_path / "none")).key == "UTC"
    assert local_zone({}, str(tmp_path / "none")).key == "UTC"
