"""One retry loop for a streaming provider call: the seeds' recovery levels in order.

``stream_with_recovery`` runs the current target's adapter stream, forwards its
events, and on failure classifies the exception once and acts on the flags:

- level 1: a history the adapter cannot encode (lone surrogates, bad UTF-8) is sanitised once and sent again;
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
from types import MappingProxyType
from typing import NoReturn, Protocol

import attrs
import httpx2
import trio

from config.recovery import RetryConfig
from messages.events import TextDelta
from providers._lazy_sdk import ANTHROPIC, OPENAI, sdk_types
from providers.base import ProviderAdapter
from providers.errors import ProviderError, ProviderResponseError, UnencodableRequest
from providers.recovery.backoff import Backoff
from providers.recovery.classifier import ClassifiedError, FailoverReason, classify
from providers.recovery.credentials import Credential, CredentialPool
from providers.recovery.errors import NeedsCompression, NoCredentialAvailable, RecoveryExhausted
from providers.recovery.fallback import FallbackChain, ProviderTarget
from messages.chat import dict_form, messages_from_dicts
from providers.recovery.history import strip_reasoning
from providers.recovery.sanitize import sanitize_value
from providers.recovery.status import StatusKind
from providers.types import ChatRequest, StreamEvent, StreamFinished, UsageReported

log = logging.getLogger(__name__)

_RECOVERABLE: tuple[type[BaseException], ...] = (ProviderError, httpx2.TransportError, trio.TooSlowError, OSError)


def recoverable() -> tuple[type[BaseException], ...]:
    """Failures the loop recovers from (anything else, a bug in an adapter, propagates): each SDK's API
    errors too once it is loaded."""
    return (*_RECOVERABLE, *sdk_types(OPENAI, "APIError"), *sdk_types(ANTHROPIC, "APIError"))

_GUIDANCE: Mapping[FailoverReason, str] = MappingProxyType({
    FailoverReason.auth: "check the API key for {provider} (HERMES_ACTORS_HOME/.env) or add a fallback provider",
    FailoverReason.auth_permanent: "the key for {provider} is rejected; replace it",
    FailoverReason.billing: "the {provider} account is out of credit; top it up or configure fallback_providers",
    FailoverReason.model_not_found: "model {model} is not available at {provider}; pick another with --model",
    FailoverReason.provider_policy_blocked: "the provider's data policy blocks this model; change your provider privacy settings",
    FailoverReason.image_too_large: "an attached image is too large; send a smaller one",
    FailoverReason.format_error: "the provider rejected the request as malformed (see its message above)",
    FailoverReason.llama_cpp_grammar_pattern: "the local server rejects regex patterns in tool schemas",
    FailoverReason.connection: "check the network connection and the base URL of {provider}",
})


class ProviderConnector(Protocol):
    """Builds adapters for targets and rebuilds their HTTP clients (level 7)."""

    def adapter(self, target: ProviderTarget, api_key: str | None) -> ProviderAdapter:
        """An adapter talking to ``target`` with ``api_key`` (``None``: the default key)."""

    async def rebuild(self, target: ProviderTarget, api_key: str | None) -> None:
        """Drop and recreate the shared HTTP client of ``target`` and ``api_key``."""


EventSink = Callable[[StreamEvent], Awaitable[None]]
# Told each recovery step before it happens: what the loop does and a line the user may see.
StatusSink = Callable[[StatusKind, str], Awaitable[None]]


async def _ignore(*_: object) -> None:
    return None


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
    context_length: Callable[[str], int | None] | None = None,
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
        on_status: told ``(kind, text)`` before each recovery action; ``text``
            is a line for the user and never holds a secret.
        approx_tokens: estimated history size, for the overflow heuristics.
        context_length: a model's context window by model name
            (``ModelMetadata.context_length``), for the overflow heuristics.

    Returns:
        The successful attempt's ``StreamFinished``.

    Raises:
        NeedsCompression: the history must be compressed before calling again.
        RecoveryExhausted: retries, keys and fallbacks are used up, or the
            failure is permanent (its message says what to do).
    """
    retry = retry or RetryConfig()
    run = _RecoveryRun(
        request=request,
        chain=chain,
        connector=connector,
        pools=pools or {},
        retry=retry,
        backoff=backoff or Backoff(retry),
        on_event=on_event,
        on_status=on_status,
        approx_tokens=approx_tokens,
        context_length=context_length or (lambda model: None),
    )
    return await run.run()


@attrs.define
class _RecoveryRun:
    """One ``stream_with_recovery`` call: its collaborators and its recovery state."""

    request: ChatRequest
    chain: FallbackChain
    connector: ProviderConnector
    pools: Mapping[str, CredentialPool]
    retry: RetryConfig
    backoff: Backoff
    on_event: EventSink
    on_status: StatusSink
    approx_tokens: int
    context_length: Callable[[str], int | None]
    # Per-target state, reset on fallback.
    retries: int = 0
    rebuilt: bool = False
    lowered: bool = False
    # Per-call state.
    stripped: bool = False
    shown: bool = False  # the current attempt forwarded something the user sees
    # A list, not a str: += on an attribute copies the whole text per chunk.
    partial: list[str] = attrs.Factory(list)

    async def run(self) -> StreamFinished:
        """Attempt, classify, recover, until a reply finishes or recovery raises."""
        while True:
            target = self.chain.current
            pool = self.pools.get(target.provider)
            try:
                credential = await pool.select() if pool is not None else None
            except NoCredentialAvailable as exc:
                await self._fallback(f"every key for {target.provider} is cooling down", exc, None)
                continue
            try:
                return await self._attempt(target, credential)
            except UnencodableRequest:
                # The adapter's encoding is the check (no second encode of every request): repair once.
                if not await self._sanitize():
                    raise
                continue
            except recoverable() as exc:
                classified = classify(
                    exc,
                    provider=target.provider,
                    approx_tokens=self.approx_tokens,
                    context_length=self.context_length(target.model),
                )
                log.warning(
                    "provider call to %s failed: %s (%s, status %s)",
                    target.label, classified.reason.value, classified.message, classified.status_code,
                )
                if self.shown:
                    await self._status(StatusKind.partial_output, "the reply was cut off; it starts over")
                await self._recover(exc, classified, target, credential, pool)

    async def _sanitize(self) -> bool:
        """Level 1: never send lone surrogates or undecodable bytes; True if anything was repaired."""
        # Sanitised in their dict form, which holds every string they carry.
        messages, messages_changed = sanitize_value([dict_form(m) for m in self.request.messages])
        tools, tools_changed = sanitize_value(self.request.tools)
        if not (messages_changed or tools_changed):
            return False
        tools_json = None if tools_changed else self.request.tools_json  # it encodes the tools as they were
        typed = messages_from_dicts(messages) if messages_changed else self.request.messages
        self.request = attrs.evolve(self.request, messages=typed, tools=tools, tools_json=tools_json)
        await self._status(StatusKind.sanitize, "removed invalid characters from the conversation before sending")
        return True

    async def _attempt(self, target: ProviderTarget, credential: Credential | None) -> StreamFinished:
        adapter = self.connector.adapter(target, credential.key if credential else None)
        request = attrs.evolve(self.request, model=target.model)
        self.shown = False
        self.partial = []
        async with adapter.stream(request) as events:
            async for event in events:
                if isinstance(event, StreamFinished):
                    return event
                if isinstance(event, TextDelta):
                    self.partial.append(event.text)
                self.shown = self.shown or not isinstance(event, UsageReported)
                await self.on_event(event)
        raise ProviderResponseError(f"the stream from {target.label} ended without a final message")

    async def _recover(
        self,
        exc: BaseException,
        classified: ClassifiedError,
        target: ProviderTarget,
        credential: Credential | None,
        pool: CredentialPool | None,
    ) -> None:
        """Act on one classified failure: returns to try again, raises to stop."""
        reason = classified.reason
        what = f"{target.label}: {reason.value}" + (f" ({classified.status_code})" if classified.status_code else "")
        # Level 3: a thinking block signature the provider no longer accepts.
        if reason is FailoverReason.thinking_signature:
            if self.stripped:
                await self._give_up(target, classified, exc)
            self.stripped = True
            messages, _ = strip_reasoning(self.request.messages)
            self.request = attrs.evolve(self.request, messages=messages)
            await self._status(StatusKind.strip_reasoning, f"{what}; resending without reasoning blocks")
            return
        # Levels 2 and 4: another key of the same provider.
        if classified.should_rotate_credential and pool is not None and credential is not None:
            if await pool.may_recover_from_rate_limit(credential):
                await pool.mark_exhausted(credential, status_code=classified.status_code, reset_hint=classified.reset_hint)
                await self._status(StatusKind.rotate_credential, f"{what}; switching from key {credential.label} to another")
                return
        # Level 6, then 5: the request is too large.
        if reason is FailoverReason.context_overflow and not classified.should_compress and not self.lowered:
            available = classified.available_output_tokens or 0
            current = self.request.max_tokens
            self.lowered = True
            self.request = attrs.evolve(self.request, max_tokens=available if current is None else min(current, available))
            await self._status(StatusKind.lower_max_tokens, f"{what}; lowering max_tokens to {available}")
            return
        if classified.should_compress or reason is FailoverReason.context_overflow:
            await self._status(StatusKind.compress, f"{what}; the conversation must be compressed")
            raise NeedsCompression(f"{target.label} needs a smaller context: {classified.message}", classified=classified) from exc
        # Level 7: a transport failure may have poisoned the connection pool.
        if reason is FailoverReason.timeout and not self.rebuilt:
            self.rebuilt = True
            await self._status(StatusKind.rebuild_client, f"{what}; reconnecting")
            await self.connector.rebuild(target, credential.key if credential else None)
            return
        # A name that does not resolve, or a refused connection, fails in milliseconds: a few quick
        # tries, not the minute-long backoff a loaded server is given.
        if reason is FailoverReason.connection:
            await self._retry_connection(what, exc, classified, target)
            return
        # Level 8, eagerly: retrying cannot help, or a rate limit no other key
        # can absorb would only hit the same exhausted quota again.
        no_other_key = reason is FailoverReason.rate_limit and self.chain.has_next()
        if classified.should_fallback and (not classified.retryable or no_other_key):
            await self._fallback(what, exc, classified)
            return
        if not classified.retryable:
            await self._give_up(target, classified, exc)
        # Level 9: back off and retry the same target; level 8 once retries run out.
        self.retries += 1
        if self.retries > self.retry.max_retries:
            if classified.should_fallback and self.chain.has_next():
                await self._fallback(f"{what} after {self.retry.max_retries} retries", exc, classified)
                return
            await self._give_up(target, classified, exc)
        delay = self.backoff.delay(self.retries, retry_after=classified.retry_after)
        await self._status(StatusKind.backoff, f"{what}; retrying in {delay:.1f} s (retry {self.retries} of {self.retry.max_retries})")
        await trio.sleep(delay)

    async def _retry_connection(
        self, what: str, exc: BaseException, classified: ClassifiedError, target: ProviderTarget
    ) -> None:
        """Retry an unreachable host (unresolved or refusing) ``retry.connection_retries`` times, then fall back or stop."""
        self.retries += 1
        budget = self.retry.connection_retries
        if self.retries > budget:
            if self.chain.has_next():
                await self._fallback(f"{what} after {budget} retries", exc, classified)
                return
            await self._give_up(target, classified, exc)
        delay = self.retry.connection_delay
        await self._status(StatusKind.backoff, f"{what}; retrying in {delay:.1f} s (retry {self.retries} of {budget})")
        await trio.sleep(delay)

    async def _fallback(self, what: str, exc: BaseException, classified: ClassifiedError | None) -> None:
        previous = self.chain.current
        target = self.chain.advance()
        if target is None:
            await self._give_up(previous, classified, exc)
        self.retries = 0
        self.rebuilt = False
        self.lowered = False
        await self._status(StatusKind.fallback, f"{what}; falling back to {target.label}")

    async def _give_up(self, target: ProviderTarget, classified: ClassifiedError | None, exc: BaseException) -> NoReturn:
        """Level 10: stop, telling the user what to do."""
        reason = classified.reason if classified else FailoverReason.rate_limit
        hint = _GUIDANCE.get(reason, "try again later or configure fallback_providers").format(
            provider=target.provider, model=target.model
        )
        detail = classified.message if classified else str(exc)
        text = f"{target.label} failed ({reason.value}): {detail} — {hint}"
        await self._status(StatusKind.give_up, text)
        raise RecoveryExhausted(text, classified=classified, partial_text="".join(self.partial)) from exc

    async def _status(self, kind: StatusKind, text: str) -> None:
        log.info("recovery %s: %s", kind.value, text)
        await self.on_status(kind, text)
