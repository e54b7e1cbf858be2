"""The production ``ProviderConnector``: adapters over the daemon's shared ``ClientPool``."""

from __future__ import annotations

from collections.abc import Callable

from config.providers import StreamingConfig
from providers.base import ProviderAdapter
from providers.clients import ClientPool, make_adapter
from providers.metadata import ModelMetadata
from providers.recovery.fallback import ProviderTarget
from providers.types import ProviderSettings


def _no_default_key(target: ProviderTarget) -> str | None:
    return None


class PooledConnector:
    """Builds adapters for targets from the shared client pool; rebuilds pool clients (level 7).

    Args:
        clients: the daemon's client pool (owned and closed by the supervisor).
        streaming: the ``streaming`` settings (stale timeout of every stream).
        metadata: model limits, for Anthropic's ``max_tokens`` ceiling.
        default_key: the key of a target used without a credential pool
            (the provider's usual environment variable, typically).
    """

    def __init__(
        self,
        clients: ClientPool,
        streaming: StreamingConfig | None = None,
        metadata: ModelMetadata | None = None,
        default_key: Callable[[ProviderTarget], str | None] = _no_default_key,
    ) -> None:
        self._clients = clients
        self._streaming = streaming or StreamingConfig()
        self._metadata = metadata
        self._default_key = default_key

    def settings(self, target: ProviderTarget, api_key: str | None) -> ProviderSettings:
        """The provider settings of ``target`` with ``api_key`` (or its default key)."""
        key = api_key if api_key is not None else self._default_key(target)
        return ProviderSettings(target.provider, target.model, target.base_url, target.api_mode, key)

    def adapter(self, target: ProviderTarget, api_key: str | None) -> ProviderAdapter:
        """An adapter for ``target`` drawing its client from the pool."""
        return make_adapter(self.settings(target, api_key), self._clients, self._streaming, self._metadata)

    async def rebuild(self, target: ProviderTarget, api_key: str | None) -> None:
        """Replace the pool's client for ``target`` and ``api_key`` with a fresh one."""
        await self._clients.rebuild(self.settings(target, api_key))
