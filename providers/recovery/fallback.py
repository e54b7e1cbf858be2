"""The ``fallback_providers`` chain: which provider/model takes over when the current one fails.

The chain belongs to a session: once it has moved on, the session keeps
talking to the new provider (the seeds' behaviour), so ``advance`` is one-way.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from config.recovery import FallbackProviderConfig
from providers.modes import default_base_url, resolve_api_mode


@attrs.frozen
class ProviderTarget:
    """A provider, model and endpoint to send requests to."""

    provider: str
    model: str
    base_url: str | None
    api_mode: str

    @property
    def label(self) -> str:
        """``provider/model`` for status lines."""
        return f"{self.provider}/{self.model}"

    @classmethod
    def resolve(cls, provider: str, model: str, base_url: str | None = None, api_mode: str | None = None) -> ProviderTarget:
        """A target whose ``api_mode`` (and, for providers the SDKs do not know, ``base_url``) is resolved the usual way when not given.

        Raises:
            ProviderConfigError: ``api_mode`` names no known mode.
        """
        base_url = base_url or default_base_url(provider)
        return cls(provider, model, base_url, resolve_api_mode(api_mode, provider, base_url))


class FallbackChain:
    """The primary target followed by the configured fallbacks, consumed in order.

    Args:
        primary: the target a session starts with.
        fallbacks: the ``fallback_providers`` targets; entries equal to the
            primary or repeated are skipped.
    """

    def __init__(self, primary: ProviderTarget, fallbacks: Sequence[ProviderTarget] = ()) -> None:
        targets = [primary]
        for target in fallbacks:
            if target not in targets:
                targets.append(target)
        self._targets = tuple(targets)
        # Invariant: 0 <= _position < len(_targets); it only grows.
        self._position = 0

    @classmethod
    def from_config(cls, primary: ProviderTarget, entries: Sequence[FallbackProviderConfig]) -> FallbackChain:
        """A chain from the ``fallback_providers`` config list."""
        return cls(primary, [ProviderTarget.resolve(e.provider, e.model, e.base_url, e.api_mode) for e in entries])

    @property
    def current(self) -> ProviderTarget:
        """The target requests go to now."""
        return self._targets[self._position]

    @property
    def position(self) -> int:
        """0 for the primary, n for the n-th fallback."""
        return self._position

    @property
    def remaining(self) -> tuple[ProviderTarget, ...]:
        """The fallbacks not tried yet."""
        return self._targets[self._position + 1 :]

    def has_next(self) -> bool:
        """Whether a fallback is left."""
        return self._position + 1 < len(self._targets)

    def advance(self) -> ProviderTarget | None:
        """Move to the next fallback and return it, or ``None`` (staying put) when none is left."""
        if not self.has_next():
            return None
        self._position += 1
        return self.current
