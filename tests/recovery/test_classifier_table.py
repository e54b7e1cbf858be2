"""The classifier's table on errors as the provider layer and the transports raise them."""

from __future__ import annotations

import ssl

import httpx2
import pytest
import trio

from providers.errors import ProviderConnectionError, ProviderStatusError, ProviderTimeoutError, StreamStalled
from providers.recovery import ClassifiedError, FailoverReason, classify

R = FailoverReason


def status(code: int, message: str = "", *, error_type: str | None = None, headers: dict[str, str] | None = None) -> ProviderStatusError:
    body = {"error": {"type": error_type or "error", "message": message}}
    return ProviderStatusError(f"Error code: {code}", status_code=code, body=body, headers=headers, error_type=error_type)


def transport(exc: BaseException, wrapper: type[ProviderConnectionError] = ProviderConnectionError) -> ProviderConnectionError:
    try:
        raise wrapper(str(exc)) from exc
    except ProviderConnectionError as wrapped:
        return wrapped


ROWS: list[tuple[str, BaseException, FailoverReason, dict[str, object]]] = [
    ("401", status(401, "invalid x-api-key", error_type="authentication_error"), R.auth, {}),
    ("403", status(403, "permission denied"), R.auth, {}),
    ("402 billing", status(402, "Your credit balance is too low"), R.billing, {}),
    ("402 usage limit + transient", status(402, "Usage limit reached. Try again in 5 minutes."), R.rate_limit, {}),
    ("402 usage limit alone", status(402, "Monthly usage limit reached"), R.billing, {}),
    ("404", status(404, "model: claude-9 not found", error_type="not_found_error"), R.model_not_found, {}),
    ("413", status(413, "request too large"), R.payload_too_large, {}),
    ("429", status(429, "Rate limit exceeded", error_type="rate_limit_error"), R.rate_limit, {}),
    ("429 quota", status(429, "You exceeded your current quota", error_type="insufficient_quota"), R.billing, {}),
    ("429 long context tier", status(429, "Extra usage is required for long context requests"), R.long_context_tier, {}),
    ("500", status(500, "Internal error", error_type="api_error"), R.server_error, {}),
    ("502", status(502, "Bad gateway"), R.server_error, {}),
    ("503", status(503, "Service unavailable"), R.overloaded, {}),
    ("529", status(529, "Overloaded", error_type="overloaded_error"), R.overloaded, {}),
    ("400 context", status(400, "This model's maximum context length is 8192 tokens"), R.context_overflow, {}),
    ("400 other", status(400, "messages: roles must alternate"), R.format_error, {}),
    ("422", status(422, "Unprocessable"), R.format_error, {}),
    ("400 thinking signature", status(400, "messages.1.content.0: Invalid `signature` in `thinking` block"), R.thinking_signature, {}),
    ("400 image", status(400, "image exceeds the maximum allowed size of 5 MB"), R.image_too_large, {}),
    ("400 llama grammar", status(400, "failed to parse grammar: pattern not supported"), R.llama_cpp_grammar_pattern, {}),
    ("404 data policy", status(404, "No endpoints found matching your data policy"), R.provider_policy_blocked, {}),
    ("mid-stream overloaded (status 200)", ProviderStatusError("Overloaded", status_code=200, error_type="overloaded_error"), R.overloaded, {}),
    ("read timeout", transport(httpx2.ReadTimeout("timed out"), ProviderTimeoutError), R.timeout, {}),
    ("connect error", transport(httpx2.ConnectError("connection refused")), R.connection, {}),
    ("stalled stream", StreamStalled("no chunk for 90 s"), R.timeout, {}),
    ("raw httpx2 read timeout", httpx2.ReadTimeout("timed out"), R.timeout, {}),
    ("raw disconnect, small session", httpx2.RemoteProtocolError("peer closed connection without sending complete message body"), R.timeout, {"approx_tokens": 1000, "context_length": 100_000}),
    ("raw disconnect, large session", httpx2.RemoteProtocolError("peer closed connection without sending complete message body"), R.context_overflow, {"approx_tokens": 70_000, "context_length": 100_000}),
    ("ssl alert on large session", transport(ssl.SSLError(1, "[SSL: DECRYPTION_FAILED_OR_BAD_RECORD_MAC] decryption failed")), R.timeout, {"approx_tokens": 90_000, "context_length": 100_000}),
    ("trio deadline", trio.TooSlowError(), R.timeout, {}),
    ("message-only rate limit", RuntimeError("rate limit exceeded, slow down"), R.rate_limit, {}),
    ("unknown", ValueError("something odd"), R.unknown, {}),
]


class TestClassifierTable:
    """Every row of the table maps to its reason."""

    @pytest.mark.parametrize(("name", "exc", "reason", "kwargs"), ROWS, ids=[row[0] for row in ROWS])
    def test_row(self, name: str, exc: BaseException, reason: FailoverReason, kwargs: dict[str, object]) -> None:
        assert classify(exc, provider="test", **kwargs).reason is reason  # type: ignore[arg-type]  # the cases' keyword arguments vary; the call checks them at run time


FLAGS = {
    # reason: (retryable, compress, rotate, fallback)
    R.auth: (False, False, True, True),
    R.billing: (False, False, True, True),
    R.rate_limit: (True, False, True, True),
    R.overloaded: (True, False, False, True),
    R.server_error: (True, False, False, True),
    R.timeout: (True, False, False, True),
    R.context_overflow: (True, True, False, False),
    R.payload_too_large: (True, True, False, False),
    R.model_not_found: (False, False, False, True),
    R.format_error: (False, False, False, True),
    R.thinking_signature: (True, False, False, False),
    R.unknown: (True, False, False, True),
}


class TestRecoveryFlags:
    """The flags the retry loop reads follow the reason."""

    @pytest.mark.parametrize(("name", "exc", "reason", "kwargs"), [r for r in ROWS if r[2] in FLAGS], ids=[r[0] for r in ROWS if r[2] in FLAGS])
    def test_flags(self, name: str, exc: BaseException, reason: FailoverReason, kwargs: dict[str, object]) -> None:
        c = classify(exc, **kwargs)  # type: ignore[arg-type]  # the cases' keyword arguments vary; the call checks them at run time
        assert FLAGS[reason] == (c.retryable, c.should_compress, c.should_rotate_credential, c.should_fallback)

    def test_account_wide_quota_does_not_rotate(self) -> None:
        c = classify(status(429, "quota exceeded per minute"), provider="google-gemini-cli")
        assert (c.reason, c.should_rotate_credential, c.should_fallback) == (R.rate_limit, False, True)

    def test_auth_after_refresh_is_permanent(self) -> None:
        c = classify(status(401, "invalid key"), after_auth_refresh=True)
        assert (c.reason, c.should_rotate_credential, c.retryable) == (R.auth_permanent, False, False)


class TestHints:
    """Classification carries the hints the loop needs, parsed once."""

    def test_available_output_from_anthropic_overflow(self) -> None:
        exc = status(400, "input length and `max_tokens` exceed context limit: 188240 + 21333 > 200000, decrease input length")
        c = classify(exc)
        assert (c.reason, c.available_output_tokens, c.should_compress) == (R.context_overflow, 11760, False)

    def test_tiny_available_output_means_compress(self) -> None:
        c = classify(status(400, "input length and `max_tokens` exceed context limit: 199900 + 4096 > 200000"))
        assert (c.available_output_tokens, c.should_compress) == (100, True)

    def test_retry_after_header(self) -> None:
        assert classify(status(429, "slow down", headers={"Retry-After": "17"})).retry_after == 17.0

    def test_retry_after_from_message(self) -> None:
        assert classify(status(402, "usage limit reached, try again in 5 minutes")).retry_after == 300.0

    def test_reset_hint_from_body(self) -> None:
        exc = ProviderStatusError("limited", status_code=429, body={"error": {"message": "rate limited", "reset_at": 1_900_000_000}})
        assert classify(exc).reset_hint == 1_900_000_000

    def test_status_code_kept(self) -> None:
        assert classify(status(503, "x")).status_code == 503

    def test_secret_masked_in_message(self) -> None:
        c = classify(status(401, "Incorrect API key provided: sk-proj-abcdefghijklmnopqrstuvwx"))
        assert "Incorrect API key provided: [REDACTED]" == c.message

    def test_result_is_frozen(self) -> None:
        c = classify(status(500, "x"))
        assert isinstance(c, ClassifiedError)
        with pytest.raises(AttributeError):
            c.retryable = False  # type: ignore[misc]  # deliberately wrong: the refusal is what the test checks
