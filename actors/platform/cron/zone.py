"""The user's time zone: ``TZ`` when set, else the system's (``/etc/localtime``), else UTC."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

__all__ = ["local_zone"]

log = logging.getLogger("hermes_actors.platform.cron")

_LOCALTIME = "/etc/localtime"


def local_zone(environ: Mapping[str, str] = os.environ, localtime: str = _LOCALTIME) -> ZoneInfo:
    """The IANA zone schedules are read in (blocking: it may read the file system)."""
    name = environ.get("TZ", "").lstrip(":")
    if not name:
        try:
            target = os.path.realpath(localtime)
        except OSError:
            target = ""
        name = target.split("zoneinfo/", 1)[1] if "zoneinfo/" in target else "UTC"
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        log.warning("time zone %r is unknown; cron schedules are read in UTC", name)
        return ZoneInfo("UTC")
