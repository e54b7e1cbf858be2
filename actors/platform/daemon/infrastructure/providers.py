"""The ``providers`` actor: owner of the daemon's shared HTTP clients.

Every session borrows its SDK client from one :class:`providers.clients.ClientPool`
(one client per provider, base URL and key) and the web tools share one
``httpx2`` client; this actor closes them all when the daemon stops, after
every session is gone.
"""

from __future__ import annotations

from typing import Any

import attrs
import httpx2
import trio

from actors import Actor
from messages.supervision import ActorState
from providers.clients import ClientPool

__all__ = ["ProvidersActor"]


class ProvidersActor(Actor[None]):
    """Holds the shared clients for the daemon's life and closes them at the end."""

    kind = "providers"

    def __init__(self, clients: ClientPool, web_client: httpx2.AsyncClient) -> None:
        super().__init__()
        self.clients = clients
        self.web_client = web_client

    def snapshot_details(self) -> dict[str, Any]:
        return attrs.asdict(self.clients.statistics())

    async def main(self) -> None:
        self.state = ActorState.RUNNING
        await trio.sleep_forever()

    async def on_stop(self) -> None:
        await self.clients.aclose()
        await self.web_client.aclose()
