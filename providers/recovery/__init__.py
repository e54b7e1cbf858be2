"""Provider error recovery: classification, backoff, credential pools, fallback,
history sanitising, tool-call repair and the one retry loop that uses them.

Public API::

    classify(exc, *, provider, approx_tokens, context_length) -> ClassifiedError
    stream_with_recovery(request, *, chain, connector, pools, retry, backoff,
                         on_event, on_status, approx_tokens, context_length) -> StreamFinished
    CredentialPool(provider, keys, *, strategy, state_path, clock, rng)
    load_provider_keys(config, env) -> ProviderKeys(pools, key_for)
    FallbackChain(primary, fallbacks) / ProviderTarget
    Backoff(config, seed).delay(attempt, retry_after=None)
    sanitize_messages(messages), strip_reasoning(messages)
    repair_tool_arguments(raw, tool_name=...), repair_tool_name(name, registered)
"""

from __future__ import annotations

from providers.recovery.backoff import Backoff, backoff_delay
from providers.recovery.connector import PooledConnector
from providers.recovery.classifier import ClassifiedError, FailoverReason, classify
from providers.recovery.credentials import (
    Credential,
    CredentialPool,
    PoolStatistics,
    cooldown_seconds,
    state_path_for,
)
from providers.recovery.exceptions import (
    CredentialStoreError,
    NeedsCompression,
    NoCredentialAvailable,
    RecoveryError,
    RecoveryExhausted,
)
from providers.recovery.fallback import FallbackChain, ProviderTarget
from providers.recovery.history import strip_reasoning
from providers.recovery.keys import KEY_VARIABLES, ProviderKeys, keys_from_env, load_provider_keys, primary_variable
from providers.recovery.json_repair import repair_tool_arguments
from providers.recovery.policy import ProviderConnector, stream_with_recovery
from providers.recovery.reset_time import parse_reset_time
from providers.recovery.sanitize import sanitize_messages, sanitize_text
from providers.recovery.status import StatusKind, StatusUpdate
from providers.recovery.tool_names import normalize_tool_name, repair_tool_name

__all__ = [
    "KEY_VARIABLES",
    "Backoff",
    "ClassifiedError",
    "Credential",
    "CredentialPool",
    "CredentialStoreError",
    "FailoverReason",
    "FallbackChain",
    "NeedsCompression",
    "NoCredentialAvailable",
    "PoolStatistics",
    "PooledConnector",
    "ProviderConnector",
    "ProviderKeys",
    "ProviderTarget",
    "RecoveryError",
    "RecoveryExhausted",
    "StatusKind",
    "StatusUpdate",
    "backoff_delay",
    "classify",
    "cooldown_seconds",
    "keys_from_env",
    "load_provider_keys",
    "normalize_tool_name",
    "parse_reset_time",
    "primary_variable",
    "repair_tool_arguments",
    "repair_tool_name",
    "sanitize_messages",
    "sanitize_text",
    "state_path_for",
    "stream_with_recovery",
    "strip_reasoning",
]
