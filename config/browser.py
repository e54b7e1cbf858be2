"""Configuration of the browser tools (yaml section ``browser``)."""

from __future__ import annotations

import re
from collections.abc import Iterable

import attrs
from attrs import validators as v

from config.validators import integer, non_empty_str, positive_number, str_tuple

__all__ = ["DIALOG_POLICIES", "BrowserConfig"]

# A host name or an IP address: what Chromium's resolver rules can name (a comma or a space would end one).
_HOST = re.compile(r"[A-Za-z0-9_.:-]+")

#: What happens to a page's ``alert``/``confirm``/``prompt``: held for the model's browser_dialog, or
#: answered at once (Hermes's values).
DIALOG_POLICIES = ("must_respond", "auto_dismiss", "auto_accept")


def _host_tuple(value: Iterable[str]) -> tuple[str, ...]:
    return tuple(value)


@attrs.frozen(kw_only=True)
class BrowserConfig:
    """Section ``browser``: the Chromium a session's browser tools drive.

    Hermes's keys where they apply (``headed``, ``command_timeout``, ``inactivity_timeout``,
    ``dialog_policy``, ``dialog_timeout_s``); the rest are
    ours (docs/HERMES_COMPAT.md).

    Attributes:
        executable_path: ``auto`` (the first of chromium, chromium-browser, google-chrome ... on ``PATH``,
            then the macOS app bundles) or the path of a Chromium-family browser.
        headed: Show the window (needs a display); headless by default.
        command_timeout: Seconds one browser command may take, a page load included; a page still
            loading then is stopped and the call fails.
        inactivity_timeout: Seconds a session's browser may sit unused before it is closed (it starts
            again at the next browser call, with a fresh profile).
        allowed_domains: Hosts the pages may reach (a request's host, or a domain it ends in); empty for
            any. Every request a page makes is checked, the pages' scripts and images included, and
            every other name resolves to nothing (WebSockets too). Each is a host name or an IP address.
        max_pages: Pages (tabs, popups) open at once in a session's browser; a page opened past it is closed.
        dialog_policy: A page's JavaScript dialog: ``must_respond`` holds it for the model (browser_dialog),
            ``auto_dismiss`` and ``auto_accept`` answer it at once.
        dialog_timeout_s: Seconds a held dialog waits for the model before it is dismissed.
    """

    executable_path: str = attrs.field(default="auto", validator=non_empty_str)
    headed: bool = attrs.field(default=False, validator=v.instance_of(bool))
    command_timeout: float = attrs.field(default=30.0, validator=positive_number)
    inactivity_timeout: float = attrs.field(default=120.0, validator=positive_number)
    allowed_domains: tuple[str, ...] = attrs.field(
        default=(), converter=_host_tuple, validator=v.and_(str_tuple, v.deep_iterable(v.matches_re(_HOST)))
    )
    max_pages: int = attrs.field(default=5, validator=integer(ge=1, le=100))
    dialog_policy: str = attrs.field(default="must_respond", validator=v.in_(DIALOG_POLICIES))
    dialog_timeout_s: float = attrs.field(default=300.0, validator=positive_number)
