"""Who may call the API: the bearer key, and the start-up safety check.

The key comes from ``API_SERVER_KEY`` (the daemon's environment or
``HERMES_ACTORS_HOME/.env``), else ``platforms.api_server.key``. Without a key
of at least :data:`MIN_KEY_LENGTH` characters the API refuses to start, unless
it is bound to a loopback address and ``auth_disabled`` says so explicitly (which
the configuration allows only where no tool's process reaches that loopback:
``config.api.auth_disabled_refusal``). Wrong keys slow their client down
(:mod:`actors.platform.api.throttle`).
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
from collections.abc import Mapping

from actors.platform.api.errors import ApiStartRefused, KeyBackOff, Unauthorized
from actors.platform.api.throttle import KeyThrottle
from config.api import KEY_VARIABLE, MIN_KEY_LENGTH, ApiServerConfig

__all__ = ["KEY_VARIABLE", "MIN_KEY_LENGTH", "Authenticator", "is_loopback"]

log = logging.getLogger("hermes_actors.api")


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (``127.0.0.0/8``, ``::1``)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class Authenticator:
    """Checks ``Authorization: Bearer <key>`` in constant time, and slows down a client that guesses.

    Args:
        key: the expected key; None when authentication is disabled.
        throttle: the wrong keys counted by client (the dashboard's login form counts into it too).
    """

    def __init__(self, key: str | None, throttle: KeyThrottle | None = None) -> None:
        self._key = key.encode() if key is not None else None
        self.throttle = throttle if throttle is not None else KeyThrottle()

    @property
    def enabled(self) -> bool:
        """Whether requests must carry the key."""
        return self._key is not None

    @classmethod
    def from_config(cls, config: ApiServerConfig, environ: Mapping[str, str]) -> Authenticator:
        """The authenticator the configuration allows.

        Raises:
            ApiStartRefused: no usable key, and not (loopback and ``auth_disabled``).
        """
        if config.auth_disabled:
            if not is_loopback(config.host):
                raise ApiStartRefused(
                    f"platforms.api_server.auth_disabled is only allowed on a loopback host, not {config.host!r}"
                )
            return cls(None)
        key = environ.get(KEY_VARIABLE) or config.key
        if not key:
            raise ApiStartRefused(
                f"the API server needs a key: set {KEY_VARIABLE} (at least {MIN_KEY_LENGTH} characters), "
                "or bind to loopback with platforms.api_server.auth_disabled: true "
                "(allowed with sandbox.network: false and a sandbox.max_mode below full-access)"
            )
        if len(key) < MIN_KEY_LENGTH:
            raise ApiStartRefused(f"{KEY_VARIABLE} is too short: at least {MIN_KEY_LENGTH} characters are required")
        return cls(key)

    def check(self, authorization: str | None, client: str) -> None:
        """Accept the ``Authorization`` header value of a request from address ``client`` or raise.

        Raises:
            Unauthorized: missing, malformed or wrong key (the text never echoes it).
            KeyBackOff: ``client``'s wrong keys put it in a back-off: the key was not checked.
        """
        if self._key is None:
            return
        if not authorization:
            raise Unauthorized("Missing API key: send 'Authorization: Bearer <API_SERVER_KEY>'")
        wait = self.throttle.wait_left(client)
        if wait > 0:
            log.info("api: refused a key from %s unchecked: %.1f s of its back-off are left", client, wait)
            raise KeyBackOff(wait)
        scheme, _, given = authorization.partition(" ")
        if scheme.lower() != "bearer" or not self.accepts(given.strip()):
            wait = self.throttle.refused(client)
            log.warning("api: refused a wrong key from %s (its next key waits %.1f s)", client, wait)
            raise Unauthorized("Invalid API key")
        self.throttle.admitted(client)

    def accepts(self, key: str) -> bool:
        """Whether ``key`` is the API key (compared in constant time; always True when auth is disabled)."""
        if self._key is None:
            return True
        return hmac.compare_digest(key.encode(), self._key)
