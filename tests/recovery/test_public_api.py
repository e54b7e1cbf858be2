"""The package's public surface stays what other parts import."""

from __future__ import annotations

import providers.recovery as recovery

EXPECTED = {
    "KEY_VARIABLES", "ProviderKeys", "load_provider_keys", "primary_variable", "Backoff", "ClassifiedError", "Credential", "CredentialPool", "CredentialStoreError", "FailoverReason",
    "FallbackChain", "NeedsCompression", "NoCredentialAvailable", "PoolStatistics", "PooledConnector",
    "ProviderConnector", "ProviderTarget", "RecoveryError", "RecoveryExhausted", "StatusKind", "StatusUpdate",
    "backoff_delay", "classify", "cooldown_seconds", "keys_from_env", "normalize_tool_name", "parse_reset_time",
    "repair_tool_arguments", "repair_tool_name", "sanitize_messages", "sanitize_text", "state_path_for", "stream_with_recovery",
    "strip_reasoning",
}


class TestPublicSurface:
    """``__all__`` lists exactly the public names, and each is importable."""

    def test_all(self) -> None:
        assert EXPECTED == set(recovery.__all__)
        for name in recovery.__all__:
            assert getattr(recovery, name) is not None

    def test_errors_subclass_fitting_builtins(self) -> None:
        assert issubclass(recovery.NoCredentialAvailable, LookupError)
        assert issubclass(recovery.CredentialStoreError, OSError)
        assert issubclass(recovery.NeedsCompression, recovery.RecoveryError)
