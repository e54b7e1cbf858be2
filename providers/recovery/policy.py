"""One retry loop for a streaming provider call: the seeds' recovery levels in order.

``stream_with_recovery`` runs the current target's adapter stream, forwards its
events, and on failure classifies the exception once and acts on the flags:

- level 1: the history is sanitised (lone surrogates, bad UTF-8) before the first send;
- level 3: a rejected thinking signature: resend once without reasoning;
- level 2/4: an auth, billing or rate-limit failure with another key usable:
  cool the key down and rotate (no waiting);
- level 6: a context overflow that states the output room: lower ``max_tokens`` once;
- level 5: anything that needs a smaller history raises ``NeedsCompression`` for the caller;
- level 7: a transport failure rebuilds the HTTP client once per target;
- level 8: a fallback-worthy failure that retrying cannot fix (or retries
  used up) moves the fallback chain on; a rate limit with a single key falls
  back at once instead of waiting for the same quota;
- level 9: retryable failures wait a jittered backoff (``trio.sleep``, so a mock
  clock drives it) and retry, up to ``retry.max_retries`` per target;
- level 10: ``RecoveryExhausted`` with a message telling the user what to do.

Each action is announced through ``on_status`` before it happens.

Partial output: events are forwarded as they arrive, so a stream that fails
after showing text has shown text the retry will produce again. The loop never
splices attempts: after such a failure it sends a ``partial_output`` status
(the UI drops the partial text on it), and the retried reply streams in full.
The returned ``StreamFinished`` is always one attempt's complete message, so
history never holds duplicated text. When recovery is exhausted the partial
text is kept on ``RecoveryExhausted.partial_text`` for the caller to use.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import Any, NoReturn, Protocol

import anthropic
import attrs
import httpx2
import openai
import trio

from config.recovery import RetryConfig
from providers.errors import ProviderError
from providers.recovery.backoff import Backoff
from providers.recovery.classifier import ClassifiedError, FailoverReason, classify
from providers.recovery.credentials import Credential, CredentialPool
from providers.recovery.exceptions import NeedsCompression, NoCredentialAvailable, RecoveryExhausted
from providers.recovery.fallback import FallbackChain, ProviderTarget
from providers.recovery.history import strip_reasoning
from providers.recovery.sanitize import sanitize_value
from providers.recovery.status import StatusKind, StatusUpdate
from providers.types import ChatRequest, StreamEvent, StreamFinished, TextDelta

log = logging.getLogger(__name__)

# Failures the loop recovers from. Anything else (a bug in an adapter) propagates.
RECOVERABLE: tuple[type[BaseException], ...] = (
    ProviderError,
    httpx2.TransportError,
    openai.APIError,
    anthropic.APIError,
    trio.TooSlowError,
    OSError,
)

_GUIDANCE = {
    FailoverReason.auth: "check the API key for {provider} (HERMES_ACTORS_HOME/.env) or add a fallback provider",
    FailoverReason.auth_permanent: "the key for {provider} is rejected; replace it",
    FailoverReason.billing: "the {provider} account is out of credit; top it up or configure fallback_providers",
    FailoverReason.model_not_found: "model {model} is not available at {provider}; pick another with --model",
    FailoverReason.provider_policy_blocked: "the provider's data policy blocks this model; change your provider privacy settings",
    FailoverReason.image_too_large: "an attached image is too large; send a smaller one",
    FailoverReason.format_error: "the provider rejected the request as malformed; see the log for the request",
    FailoverReason.llama_cpp_grammar_pattern: "the local server rejects regex patterns in tool schemas",
}


class ProviderAdapter(Protocol):
    """What the loop needs of an adapter (``providers.base.ProviderAdapter`` has it)."""

    def stream(self, request: ChatRequest) -> AbstractAsyncContextManager[Any]:
        """An async context manager yielding an async iterator of ``StreamEvent``s."""


class ProviderConnector(Protocol):
    """Builds adapters for targets and rebuilds their HTTP clients (level 7)."""

    def adapter(self, target: ProviderTarget, api_key: str | None) -> ProviderAdapter:
        """An adapter talking to ``target`` with ``api_key`` (``None``: the default key)."""

    async def rebuild(self, target: ProviderTarget, api_key: str | None) -> None:
        """Drop and recreate the shared HTTP client of ``target`` and ``api_key``."""


EventSink = Callable[[StreamEvent], Awaitable[None]]
StatusSink = Callable[[StatusUpdate], Awaitable[None]]


async def _ignore(_: object) -> None:
    return None


@attrs.define
class _Attempt:
    """Mutable per-call recovery state (one per ``stream_with_recovery`` call)."""

    request: ChatRequest
    retries: int = 0
    rebuilt: bool = False
    stripped: bool = False
    lowered: bool = False
    partial_text: str = ""


async def stream_with_recovery(
    request: ChatRequest,
    *,
    chain: FallbackChain,
    connector: ProviderConnector,
    pools: Mapping[str, CredentialPool] | None = None,
    retry: RetryConfig | None = None,
    backoff: Backoff | None = None,
    on_event: EventSink = _ignore,
    on_status: StatusSink = _ignore,
    approx_tokens: int = 0,
    context_length: int | None = None,
) -> StreamFinished:
    """Stream one model reply, recovering from provider failures.

    Args:
        request: the call; its ``model`` is replaced by each target's model.
        chain: the session's fallback chain (advanced in place on fallback).
        connector: builds adapters and rebuilds HTTP clients.
        pools: credential pools by provider name; a provider without one
            uses the connector's default key and cannot rotate.
        retry: the ``retry`` settings (max retries per target, backoff).
        backoff: the backoff schedule (default: one from ``retry``).
        on_event: receives every stream event except the final ``StreamFinished``.
        on_status: receives a ``StatusUpdate`` before each recovery action.
        approx_tokens: estimated history size, for the overflow heuristics.
        context_length: the current model's context window, when known.

    Returns:
        The successful attempt's ``StreamFinished``.

    Raises:
        NeedsCompression: the history must be compressed before calling again.
        RecoveryExhausted: retries, keys and fallbacks are used up, or the
            failure is permanent (its message says what to do).
    """
    retry = retry or RetryConfig()
    backoff = backoff or Backoff(retry)
    pools = pools or {}
    messages, sanitized = sanitize_value(request.messages)
    tools, tools_sanitized = sanitize_value(request.tools)
    if sanitized or tools_sanitized:
        await on_status(StatusUpdate(StatusKind.sanitize, "removed invalid characters from the conversation before sending"))
        request = attrs.evolve(request, messages=messages, tools=tools)
    state = _Attempt(request)
    while True:
        target = chain.current
        pool = pools.get(target.provider)
        try:
            credential = await pool.select() if pool is not None else None
        except NoCredentialAvailable as exc:
            await _fallback_or_give_up(chain, state, on_status, f"every key for {target.provider} is cooling down", exc)
            continue
        try:
            return await _one_attempt(state, target, credential, connector, on_event)
        except RECOVERABLE as exc:
            classified = classify(exc, provider=target.provider, approx_tokens=approx_tokens, context_length=context_length)
            log.warning(
                "provider call to %s failed: %s (%s, status %s)",
                target.label, classified.reason.value, classified.message, classified.status_code,
            )
            if state.partial_text:
                await on_status(StatusUpdate(StatusKind.partial_output, "the reply was cut off; it starts over"))
            await _recover(exc, classified, state, target, credential, chain, pool, connector, retry, backoff, on_status)


async def _one_attempt(
    state: _Attempt, target: ProviderTarget, credential: Credential | None, connector: ProviderConnector, on_event: EventSink
) -> StreamFinished:
    adapter = connector.adapter(target, credential.key if credential else None)
    request = attrs.evolve(state.request, model=target.model)
    state.partial_text = ""
    async with adapter.stream(request) as events:
        async for event in events:
            if isinstance(event, StreamFinished):
                return event
            if isinstance(event, TextDelta):
                state.partial_text += event.text
            await on_event(event)
    raise ProviderError(f"the stream from {target.label} ended without a final message")


async def _recover(
    exc: BaseException,
    classified: ClassifiedError,
    state: _Attempt,
    target: ProviderTarget,
    credential: Credential | None,
    chain: FallbackChain,
    pool: CredentialPool | None,
    connector: ProviderConnector,
    retry: RetryConfig,
    backoff: Backoff,
    on_status: StatusSink,
) -> None:
    """Act on one classified failure; returns to retry, raises to stop."""
    reason = classified.reason
    what = f"{target.label}: {reason.value}" + (f" ({classified.status_code})" if classified.status_code else "")
    # Level 3: a thinking block signature the provider no longer accepts.
    if reason is FailoverReason.thinking_signature:
        if state.stripped:
            await _give_up(target, classified, state, on_status, exc)
        state.stripped = True
        messages, _ = strip_reasoning(state.request.messages)
        state.request = attrs.evolve(state.request, messages=messages)
        await on_status(StatusUpdate(StatusKind.strip_reasoning, f"{what}; resending without reasoning blocks"))
        return
    # Levels 2 and 4: another key of the same provider.
    if classified.should_rotate_credential and pool is not None and credential is not None:
        if await pool.may_recover_from_rate_limit(credential):
            await pool.mark_exhausted(credential, status_code=classified.status_code, reset_hint=classified.reset_hint)
            await on_status(StatusUpdate(StatusKind.rotate_credential, f"{what}; switching from key {credential.label} to another"))
            return
    # Level 6, then 5: the request is too large.
    if reason is FailoverReason.context_overflow and not classified.should_compress and not state.lowered:
        available = classified.available_output_tokens or 0
        state.lowered = True
        current = state.request.max_tokens
        state.request = attrs.evolve(state.request, max_tokens=available if current is None else min(current, available))
        await on_status(StatusUpdate(StatusKind.lower_max_tokens, f"{what}; lowering max_tokens to {available}"))
        return
    if classified.should_compress or reason is FailoverReason.context_overflow:
        await on_status(StatusUpdate(StatusKind.compress, f"{what}; the conversation must be compressed"))
        raise NeedsCompression(f"{target.label} needs a smaller context: {classified.message}", classified=classified) from exc
    # Level 7: a transport failure may be a poisoned connection pool.
    if reason is FailoverReason.timeout and not state.rebuilt:
        state.rebuilt = True
        await on_status(StatusUpdate(StatusKind.rebuild_client, f"{what}; reconnecting"))
        await connector.rebuild(target, credential.key if credential else None)
        return
    # Level 8 (eager): retrying cannot help, or a single-key rate limit would hit the same quota.
    single_key_rate_limit = reason is FailoverReason.rate_limit and chain.has_next()
    if classified.should_fallback and (not classified.retryable or single_key_rate_limit):
        await _fallback_or_give_up(chain, state, on_status, what, exc, classified)
        return
    if not classified.retryable:
        await _give_up(target, classified, state, on_status, exc)
    # Level 9: back off and retry the same target.
    state.retries += 1
    if state.retries > retry.max_retries:
        if classified.should_fallback and chain.has_next():
            await _fallback_or_give_up(chain, state, on_status, f"{what} after {retry.max_retries} retries", exc, classified)
            return
        await _give_up(target, classified, state, on_status, exc)
    delay = backoff.delay(state.retries, retry_after=classified.retry_after)
    await on_status(
        StatusUpdate(
            StatusKind.backoff, f"{what}; retrying in {delay:.1f} s (retry {state.retries} of {retry.max_retries})"
        )
    )
    await trio.sleep(delay)


async def _fallback_or_give_up(
    chain: FallbackChain,
    state: _Attempt,
    on_status: StatusSink,
    what: str,
    exc: BaseException,
    classified: ClassifiedError | None = None,
) -> None:
    previous = chain.current
    target = chain.advance()
    if target is None:
        await _give_up(previous, classified, state, on_status, exc)
    state.retries = 0
    state.rebuilt = False
    state.lowered = False
    await on_status(StatusUpdate(StatusKind.fallback, f"{what}; falling back to {target.label}"))


async def _give_up(
    target: ProviderTarget,
    classified: ClassifiedError | None,
    state: _Attempt,
    on_status: StatusSink,
    exc: BaseException,
) -> NoReturn:
    reason = classified.reason if classified else FailoverReason.rate_limit
    hint = _GUIDANCE.get(reason, "try again later or configure fallback_providers").format(
        provider=target.provider, model=target.model
    )
    detail = classified.message if classified else str(exc)
    text = f"{target.label} failed ({reason.value}): {detail} — {hint}"
    await on_status(StatusUpdate(StatusKind.give_up, text))
    raise RecoveryExhausted(text, classified=classified, partial_text=state.partial_text) from exc
