"""Who is logged in to the dashboard: random login tokens kept in a cookie, and their CSRF tokens.

A browser cannot put the bearer key on its own navigations, so the page's login form posts the key
once; when it matches (in constant time, :meth:`Authenticator.accepts`) the browser gets a random
token in an ``HttpOnly; SameSite=Strict`` cookie scoped to ``/dashboard``. The key itself is never
stored in the browser, put in a URL, or logged. Each login also has a CSRF token the page reads from
``/dashboard/api/state`` (same-origin only) and sends back in a header on every POST, so a form
another site submits carries the cookie (were SameSite ignored) but never the header.

Tokens live in this process only: a restarted daemon asks for the key again.
"""

from __future__ import annotations

import hmac
import secrets
from collections import OrderedDict

import attrs
import trio

__all__ = ["COOKIE_NAME", "CSRF_HEADER", "Login", "LoginBook"]

#: The cookie holding a login token.
COOKIE_NAME = "hermes_dashboard"
#: The header every cookie-authenticated POST carries its CSRF token in.
CSRF_HEADER = "x-hermes-csrf"
#: How long a login lasts (seconds).
LOGIN_SECONDS = 12 * 3600
#: Logins kept at once; the oldest is forgotten past it (a flood of logins cannot grow memory).
MAX_LOGINS = 64


@attrs.frozen
class Login:
    """One browser's login: its CSRF token and when it ends (``trio.current_time()`` seconds)."""

    csrf: str
    expires: float


class LoginBook:
    """The dashboard's live logins, by cookie token."""

    def __init__(self) -> None:
        self._logins: OrderedDict[str, Login] = OrderedDict()

    def __len__(self) -> int:
        return len(self._logins)

    def open(self) -> str:
        """A new login's cookie token (the oldest login is forgotten past :data:`MAX_LOGINS`)."""
        token = secrets.token_urlsafe(32)
        self._logins[token] = Login(secrets.token_urlsafe(32), trio.current_time() + LOGIN_SECONDS)
        while len(self._logins) > MAX_LOGINS:
            self._logins.popitem(last=False)
        return token

    def find(self, token: str | None) -> Login | None:
        """The live login the cookie ``token`` names, or None (unknown, or expired and forgotten)."""
        if not token:
            return None
        login = self._logins.get(token)
        if login is None:
            return None
        if login.expires <= trio.current_time():
            del self._logins[token]
            return None
        return login

    def close(self, token: str | None) -> None:
        """Forget a login (logging out)."""
        if token:
            self._logins.pop(token, None)

    @staticmethod
    def csrf_matches(login: Login, given: str | None) -> bool:
        """Whether ``given`` (a POST's CSRF header) is the login's token, compared in constant time."""
        return given is not None and hmac.compare_digest(given.encode(), login.csrf.encode())
