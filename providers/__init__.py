"""The provider layer: three wire protocols over the real SDKs, behind one interface.

Sessions build a :class:`ChatRequest` in the internal OpenAI-style form and
stream :data:`StreamEvent` objects from a :class:`ProviderAdapter` made by
:func:`make_adapter`; SDK clients are shared through a :class:`ClientPool`.
Nothing here knows about actors.

The SDKs take over a second to import, so the names below are loaded on first
use (``providers.scripted``, for one, needs none of them).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._lazy_sdk import openai_sdk
    from .base import ProviderAdapter
    from .clients import ClientKey, ClientPool, PoolStatistics, make_adapter
    from .errors import (
        ClientPoolClosed,
        ProviderConfigError,
        ProviderConnectionError,
        ProviderError,
        ProviderResponseError,
        ProviderStatusError,
        ProviderTimeoutError,
        ScriptError,
        StreamStalled,
    )
    from .metadata import (
        ModelLimits,
        ModelMetadata,
        OverflowInfo,
        builtin_limits,
        parse_overflow_message,
        rough_tokens,
    )
    from .modes import resolve_api_mode, uses_developer_role
    from .types import (
        ChatRequest,
        ProviderSettings,
        StreamEvent,
        StreamFinished,
        ToolCallArgumentsDelta,
        ToolCallCompleted,
        ToolCallStarted,
        Usage,
        UsageReported,
    )

# Public name -> the submodule defining it.
_EXPORTS: Mapping[str, str] = MappingProxyType(
    {
        "ChatRequest": "types",
        "ClientKey": "clients",
        "ClientPool": "clients",
        "ClientPoolClosed": "errors",
        "ModelLimits": "metadata",
        "ModelMetadata": "metadata",
        "OverflowInfo": "metadata",
        "PoolStatistics": "clients",
        "ProviderAdapter": "base",
        "ProviderConfigError": "errors",
        "ProviderConnectionError": "errors",
        "ProviderError": "errors",
        "ProviderResponseError": "errors",
        "ProviderSettings": "types",
        "ProviderStatusError": "errors",
        "ProviderTimeoutError": "errors",
        "ScriptError": "errors",
        "StreamEvent": "types",
        "StreamFinished": "types",
        "StreamStalled": "errors",
        "ToolCallArgumentsDelta": "types",
        "ToolCallCompleted": "types",
        "ToolCallStarted": "types",
        "Usage": "types",
        "UsageReported": "types",
        "builtin_limits": "metadata",
        "make_adapter": "clients",
        "openai_sdk": "_lazy_sdk",
        "parse_overflow_message": "metadata",
        "resolve_api_mode": "modes",
        "rough_tokens": "metadata",
        "uses_developer_role": "modes",
    }
)

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    """Load an exported name from its submodule on first use."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


def __dir__() -> list[str]:
    """The exported names."""
    return __all__
