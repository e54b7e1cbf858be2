"""The provider layer: three wire protocols over the real SDKs, behind one interface.

Sessions build a :class:`ChatRequest` in the internal OpenAI-style form and
stream :data:`StreamEvent` objects from a :class:`ProviderAdapter` made by
:func:`make_adapter`; SDK clients are shared through a :class:`ClientPool`.
Nothing here knows about actors.
"""

from __future__ import annotations

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
from .metadata import ModelLimits, ModelMetadata, OverflowInfo, parse_overflow_message, rough_tokens
from .modes import resolve_api_mode, uses_developer_role
from .types import (
    ChatRequest,
    ProviderSettings,
    ReasoningDelta,
    StreamEvent,
    StreamFinished,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallCompleted,
    ToolCallStarted,
    Usage,
    UsageReported,
)

__all__ = [
    "ChatRequest",
    "ClientKey",
    "ClientPool",
    "ClientPoolClosed",
    "ModelLimits",
    "ModelMetadata",
    "OverflowInfo",
    "PoolStatistics",
    "ProviderAdapter",
    "ProviderConfigError",
    "ProviderConnectionError",
    "ProviderError",
    "ProviderResponseError",
    "ProviderSettings",
    "ProviderStatusError",
    "ProviderTimeoutError",
    "ReasoningDelta",
    "ScriptError",
    "StreamEvent",
    "StreamFinished",
    "StreamStalled",
    "TextDelta",
    "ToolCallArgumentsDelta",
    "ToolCallCompleted",
    "ToolCallStarted",
    "Usage",
    "UsageReported",
    "make_adapter",
    "parse_overflow_message",
    "resolve_api_mode",
    "rough_tokens",
    "uses_developer_role",
]
