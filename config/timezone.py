"""The user's time zone (Hermes's ``timezone``): the day in the system prompt, summaries' dates, cron schedules.

Resolved as Hermes resolves it, then as a system does: ``HERMES_TIMEZONE``, the ``timezone`` key of
``config.yaml``, ``TZ``, the system's ``/etc/localtime``, else UTC. The key is checked when the file loads
(a name that is no IANA zone is a config error); a bad variable is a warning and the next source decides.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import attrs

__all__ = ["ZONE_VARIABLE", "check_zone", "user_zone"]

log = logging.getLogger("hermes_actors.config")

#: Hermes's variable, which wins over the ``timezone`` key.
ZONE_VARIABLE = "HERMES_TIMEZONE"
_LOCALTIME = "/etc/localtime"


def check_zone(instance: object, attribute: attrs.Attribute[Any], value: str | None) -> None:
    """An attrs validator: ``value`` is unset or an IANA zone name this machine knows.

    Raises:
        ValueError: any other value, naming the key.
    """
    if value is not None and _zone(value) is None:
        raise ValueError(f"{attribute.name} {value!r} is not an IANA time zone (such as Europe/Berlin or UTC)")


def user_zone(configured: str | None, environ: Mapping[str, str] = os.environ, localtime: str = _LOCALTIME) -> ZoneInfo:
    """The zone dates and schedules are read in (blocking: it may read the file system).

    Args:
        configured: the ``timezone`` key (already checked), or None.
    """
    variable = environ.get(ZONE_VARIABLE, "").strip()
    if variable:
        zone = _zone(variable)
        if zone is not None:
            return zone
        log.warning("%s=%r is not an IANA time zone; it is ignored", ZONE_VARIABLE, variable)
    if configured:
        zone = _zone(configured)
        if zone is not None:
            return zone
    system = environ.get("TZ", "").lstrip(":") or _localtime_name(localtime)
    zone = _zone(system) if system else None
    if zone is None:
        if system:
            log.warning("time zone %r is unknown; UTC is used", system)
        return ZoneInfo("UTC")
    return zone


def _localtime_name(localtime: str) -> str:
    """The zone ``/etc/localtime`` links to, or "" when it is missing or not a link into a zoneinfo tree."""
    try:
        target = os.path.realpath(localtime)
    except OSError:
        return ""
    return target.split("zoneinfo/", 1)[1] if "zoneinfo/" in target else ""


def _zone(name: str) -> ZoneInfo | None:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return None
