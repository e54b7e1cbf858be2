"""Errors raised by the recovery layer.

The provider layer's own failures (``providers.errors.ProviderError``: what one
request to one provider did) are classified by the retry loop, never re-wrapped
one by one; what leaves the loop is one of these (what the whole call came to),
with the last provider failure as ``__cause__``::

    RecoveryError(Exception)
    ├── NeedsCompression          the caller must compress the history, then call again
    ├── RecoveryExhausted         retries and fallbacks used up, or the error is permanent
    ├── NoCredentialAvailable     every key of a provider's pool is cooling down
    └── CredentialStoreError      the pool's state file cannot be read or written
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from providers.recovery.classifier import ClassifiedError


class RecoveryError(Exception):
    """Base of every failure the recovery layer reports."""


class NeedsCompression(RecoveryError):
    """The provider rejected the request as too large; compress and call again.

    Attributes:
        classified: the classification that asked for compression.
    """

    def __init__(self, message: str, *, classified: ClassifiedError) -> None:
        super().__init__(message)
        self.classified = classified


class RecoveryExhausted(RecoveryError):
    """The call failed for good: the text says what the user can do about it.

    Attributes:
        classified: the classification of the last failure (``None`` when no
            request could be made, e.g. every key was cooling down).
        partial_text: text the last attempt streamed before it failed.
    """

    def __init__(self, message: str, *, classified: ClassifiedError | None, partial_text: str = "") -> None:
        super().__init__(message)
        self.classified = classified
        self.partial_text = partial_text


class NoCredentialAvailable(RecoveryError, LookupError):
    """Every credential of the provider is cooling down.

    Attributes:
        provider: the provider whose pool is empty.
        retry_at: epoch seconds when the first entry becomes usable again.
    """

    def __init__(self, provider: str, retry_at: float | None) -> None:
        super().__init__(f"no usable credential for provider {provider!r}")
        self.provider = provider
        self.retry_at = retry_at


class CredentialStoreError(RecoveryError, OSError):
    """The credential pool's state file could not be read or written."""
