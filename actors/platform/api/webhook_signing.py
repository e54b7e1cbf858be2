"""The HMAC scheme of webhooks, both ways: Hermes's generic V2 signature.

A delivery (and the callback we post back) carries ``X-Webhook-Timestamp`` (Unix seconds) and
``X-Webhook-Signature-V2``, the hex HMAC-SHA256 of ``<timestamp>.<raw body>`` under the hook's secret.
Binding the timestamp into the signed bytes is what makes the replay window hold: a captured delivery
cannot be re-sent later under a fresh timestamp.
"""

from __future__ import annotations

import hashlib
import hmac

__all__ = ["SIGNATURE_HEADER", "TIMESTAMP_HEADER", "BadSignature", "sign", "signed_headers", "verify"]

SIGNATURE_HEADER = "X-Webhook-Signature-V2"
TIMESTAMP_HEADER = "X-Webhook-Timestamp"


class BadSignature(ValueError):
    """A delivery's signature is missing, wrong, or its timestamp is outside the replay window."""


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """The hex signature of ``body`` sent at ``timestamp``."""
    return hmac.new(secret.encode("utf-8"), timestamp.encode("ascii") + b"." + body, hashlib.sha256).hexdigest()


def signed_headers(secret: str, body: bytes, now: float) -> dict[str, str]:
    """The two headers that sign ``body`` sent at ``now`` (Unix seconds)."""
    timestamp = str(int(now))
    return {TIMESTAMP_HEADER: timestamp, SIGNATURE_HEADER: sign(secret, timestamp, body)}


def verify(secret: str, body: bytes, timestamp: str | None, signature: str | None, now: float, window: int) -> None:
    """Check a delivery's signature (constant-time) and that it was signed within ``window`` seconds of ``now``.

    Raises:
        BadSignature: what is wrong (the reason is for the log; the caller answers 401 alike).
    """
    if not signature or not timestamp:
        raise BadSignature(f"no {SIGNATURE_HEADER} and {TIMESTAMP_HEADER} headers")
    if not timestamp.isdigit():
        raise BadSignature(f"{TIMESTAMP_HEADER} is not Unix seconds")
    # Compared before the window, so a stale but valid signature and a forged one are told apart in the log.
    if not hmac.compare_digest(signature.strip().lower().encode(), sign(secret, timestamp, body).encode()):
        raise BadSignature("signature does not match")
    if abs(now - int(timestamp)) > window:
        raise BadSignature(f"timestamp is {int(now) - int(timestamp)} s from now, outside the {window} s replay window")
