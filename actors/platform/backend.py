"""What the control socket needs from the rest of the daemon, as narrow protocols.

The daemon hands the control server these objects; tests hand in the real
ones too, or leave ``sessions`` out, in which case session requests are
answered ``unavailable``.
"""

from __future__ import annotations

from typing import Any, Protocol

__all__ = ["SessionsBackend", "Subscription"]


class Subscription(Protocol):
    """A session's event stream for one subscriber (``actors.session.hub.Subscription``)."""

    def close(self) -> None:
        """Detach: nothing more is delivered."""

    def __aiter__(self) -> Any:
        """Events, until the subscription ends."""


class SessionsBackend(Protocol):
    """The ``sessions`` supervisor's service (``actors.session.service.SessionService``)."""

    async def create_session(self, options: Any) -> str:
        """Create and start a session; returns its id."""

    async def get(self, session_id: str) -> Any:
        """The live session's handle, waking it from the store when hibernated.

        Raises:
            SessionNotFound (a LookupError): no such session.
        """

    async def send(self, session_id: str, text: str, *, source: str = "cli") -> Any:
        """Deliver a user message.

        Raises:
            SessionNotFound (a LookupError); TooManyRunningTurns: the running-turn cap is reached.
        """

    async def close_session(self, session_id: str, reason: str) -> None:
        """Stop a session (it stays in the store)."""
