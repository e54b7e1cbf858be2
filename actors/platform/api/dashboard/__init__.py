"""The web dashboard, served by the HTTP API under ``/dashboard`` behind its key.

Modules: :mod:`.routes` (the HTTP routes, the login and CSRF checks, the security headers),
:mod:`.logins` (login cookies and CSRF tokens), :mod:`.desk` (what the page asks of the daemon,
through the control service), :mod:`.streams` (the live feeds as Server-Sent Events, bounded);
a wrong key at the login form counts in the API's back-off (:mod:`actors.platform.api.throttle`);
``static/`` holds the page itself: plain HTML, CSS and JavaScript, no build step and no library.
"""

from __future__ import annotations

from actors.platform.api.dashboard.desk import DashboardDesk
from actors.platform.api.dashboard.routes import BASE, dashboard_routes

__all__ = ["BASE", "DashboardDesk", "dashboard_routes"]
