"""What every platform adapter's actor shares: its connection state, the desk, the reconnect loop
with backoff, and the outbound registry's side (:meth:`PlatformAdapter.deliver`)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import trio

from actors import Actor, ActorHandle
from actors.platform.gateway.desk import GatewayDesk
from actors.platform.gateway.pairing import PairingMessage
from actors.platform.gateway.port import ChatPort, ChatRef, GatewaySettings
from markup import extract_media
from actors.platform.outbound import (
    DeliveryFailed,
    Destination,
    OutboundRegistry,
    UnknownDestination,
)
from actors.session import SessionService

__all__ = ["BACKOFF_FIRST", "BACKOFF_MAX", "PlatformAdapter", "TokenRefused"]

log = logging.getLogger("hermes_actors.platform.gateway")

BACKOFF_FIRST, BACKOFF_MAX = 1.0, 60.0


class TokenRefused(DeliveryFailed):
    """The platform refused the bot's token: reconnecting will not help until it is fixed."""


class PlatformAdapter(Actor[Any], ChatPort):
    """A messaging platform's actor; subclasses connect and implement the port's methods (a type
    checker refuses to build one that leaves any of :class:`ChatPort`'s methods out).

    Args:
        settings: the platform's section.
        sessions: the daemon's session service.
        outbound: where the adapter registers while connected.
        state_dir: where the adapter and its desk keep their files.
        pairing: the ``pairing`` actor's handle (None: only ``allow_from``).
        prefix: the platform's session id prefix.
        toolsets: the platform's toolsets.
    """

    #: The platform's name (destinations, session sources); set by each subclass.
    platform = ""

    def __init__(
        self,
        settings: GatewaySettings,
        sessions: SessionService,
        outbound: OutboundRegistry,
        state_dir: Path,
        pairing: Callable[[], ActorHandle[PairingMessage] | None],
        *,
        prefix: str,
        toolsets: tuple[str, ...],
    ) -> None:
        super().__init__()
        self.settings = settings
        self.outbound = outbound
        self.state_dir = state_dir
        self.connection = "connecting"
        self.connection_error: str | None = None
        self.sent = 0
        self.desk = GatewayDesk(
            self, settings, sessions, pairing, state_dir, self.start_soon,
            prefix=prefix, toolsets=toolsets,
        )

    def connection_details(self) -> dict[str, Any]:
        """The snapshot's common part: connection, last error, counts."""
        return {"connection": self.connection, "connection_error": self.connection_error, "sent": self.sent, **self.desk.counts()}

    async def keep_connected(self, connect: Callable[[], Awaitable[None]]) -> None:
        """Run ``connect`` again whenever it ends or fails, backing off (1 s doubling to 60 s) while
        it fails; a refused token stops trying (the state says why). The daemon never waits on this."""
        wait = BACKOFF_FIRST
        try:
            while True:
                try:
                    await connect()
                    wait = BACKOFF_FIRST
                except TokenRefused as exc:
                    self.down(str(exc))
                    log.error("%s; the %s bot stays off until the token is fixed", exc, self.platform)
                    await trio.sleep_forever()
                except DeliveryFailed as exc:
                    self.down(str(exc))
                    log.warning("%s; trying again in %.0f s", exc, wait)
                    await trio.sleep(wait)
                    wait = min(wait * 2, BACKOFF_MAX)
        finally:
            self.outbound.unregister(self)

    def up(self) -> None:
        """Connected: destinations on this platform are reachable."""
        self.connection, self.connection_error = "connected", None
        self.outbound.register(self)

    def down(self, error: str) -> None:
        """Not connected, and why."""
        self.connection, self.connection_error = "failed", error
        self.outbound.unregister(self)

    async def destination_chat(self, destination: Destination) -> ChatRef:
        """The chat a destination names, or the home channel; platforms whose chats are not numbers
        override it.

        Raises:
            UnknownDestination: no chat named and no home channel, or a chat that is not a number.
        """
        home = self.settings.home_channel
        if destination.chat is None and home is None:
            raise UnknownDestination(f"{self.platform} has no home_channel configured; name a chat ({self.platform}:CHAT_ID)")
        chat_id = destination.chat if destination.chat is not None else str(home)
        if not chat_id.lstrip("-").isdigit():
            raise UnknownDestination(f"a {self.platform} chat is a number, got {chat_id!r}")
        return ChatRef(self.platform, chat_id, destination.thread)

    async def deliver(self, destination: Destination, text: str, attachments: Sequence[str] = ()) -> None:
        """Send ``text`` and ``attachments`` to the destination's chat, or to ``home_channel``; see
        :meth:`~actors.platform.outbound.Outbound.deliver`."""
        chat = await self.destination_chat(destination)
        body, _media = extract_media(text)
        await self.send_text(chat, body or "(no answer)", markdown=True)
        for attachment in attachments:
            await self.send_file(chat, Path(attachment))
