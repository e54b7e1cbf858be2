"""The provider keys the daemon's sessions use, read once at start and kept out of logs.

Keys come from the daemon's environment and ``HERMES_ACTORS_HOME/.env`` (the environment wins).
Each provider's usual variable is its default key.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType

from config.loader import load_env_file
from providers.recovery.fallback import ProviderTarget

__all__ = ["KEY_VARIABLES", "load_secrets", "provider_key"]

#: The environment variable holding each provider's key.
KEY_VARIABLES: Mapping[str, str] = MappingProxyType(
    {
        "openai": "OPENAI_API_KEY",
        "anthropic": "ANTHROPIC_API_KEY",
        "openrouter": "OPENROUTER_API_KEY",
        "custom": "OPENAI_API_KEY",
    }
)


def load_secrets(home: Path) -> dict[str, str]:
    """The key variables of ``home/.env`` and the environment (blocking: reads a file)."""
    return {**load_env_file(home), **{k: v for k, v in os.environ.items() if k.endswith("_API_KEY")}}


def provider_key(secrets: Mapping[str, str]) -> Callable[[ProviderTarget], str | None]:
    """The default key lookup of the connector: the provider's usual variable."""

    def key_for(target: ProviderTarget) -> str | None:
        variable = "ANTHROPIC_API_KEY" if target.api_mode == "anthropic_messages" else KEY_VARIABLES.get(target.provider)
        return secrets.get(variable) if variable else None

    return key_for
