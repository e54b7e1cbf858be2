"""Recovery over real SDKs and real loopback HTTP against the scripted provider server."""

from __future__ import annotations

import json
from typing import Any

import attrs
import pytest
import trio

from messages.chat import HumanMessage
from config.recovery import RetryConfig
from providers.clients import ClientPool
from providers.errors import ProviderError
from providers.recovery import (
    CredentialPool,
    FailoverReason,
    FallbackChain,
    NeedsCompression,
    PooledConnector,
    ProviderTarget,
    StatusKind,
    classify,
    stream_with_recovery,
)
from providers.scripted import ScriptedProvider, serve_scripted_provider
from providers.types import ChatRequest

from .conftest import STREAMING


R = FailoverReason
FAST_RETRY = RetryConfig(max_retries=2, base_delay=0.01, max_delay=0.02, jitter_ratio=0.5)


@pytest.fixture
def connector(clients: ClientPool) -> PooledConnector:
    return PooledConnector(clients, STREAMING)


def chat(server: ScriptedProvider, provider: str = "openrouter") -> ProviderTarget:
    return ProviderTarget(provider, "gpt-test", server.base_url, "chat_completions")


def messages(server: ScriptedProvider, provider: str = "anthropic") -> ProviderTarget:
    return ProviderTarget(provider, "claude-test", server.root_url, "anthropic_messages")


def request() -> ChatRequest:
    return ChatRequest(messages=[HumanMessage("hi")], tools=[], model="unset", max_tokens=1000)


async def failure_of(connector: PooledConnector, target: ProviderTarget) -> ProviderError:
    """Run one real stream that must fail; the provider layer's error."""
    adapter = connector.adapter(target, None)
    with pytest.raises(ProviderError) as info:
        async with adapter.stream(attrs.evolve(request(), model=target.model)) as events:
            async for _ in events:
                pass
    return info.value


CHAT_ROWS: list[tuple[str, dict[str, Any], FailoverReason, dict[str, Any]]] = [
    ("401", {"error": {"status": 401}}, R.auth, {}),
    ("402 billing", {"error": {"status": 402}}, R.billing, {}),
    (
        "402 usage limit, transient",
        {"error": {"status": 402, "body": {"error": {"message": "Usage limit reached for your plan. Try again in 5 minutes.", "type": "usage_limit"}}}},
        R.rate_limit,
        {},
    ),
    ("403", {"error": {"status": 403}}, R.auth, {}),
    ("404", {"error": {"status": 404}}, R.model_not_found, {}),
    ("413", {"error": {"status": 413}}, R.payload_too_large, {}),
    ("429", {"error": {"status": 429, "headers": {"retry-after": "3"}}}, R.rate_limit, {}),
    ("500", {"error": {"status": 500}}, R.server_error, {}),
    ("502", {"error": {"status": 502}}, R.server_error, {}),
    ("503", {"error": {"status": 503}}, R.overloaded, {}),
    (
        "400 context length",
        {"error": {"status": 400, "body": {"error": {"message": "This model's maximum context length is 8192 tokens. However, your messages resulted in 9001 tokens.", "type": "invalid_request_error", "code": "context_length_exceeded"}}}},
        R.context_overflow,
        {},
    ),
    ("400 other", {"error": {"status": 400}}, R.format_error, {}),
    ("422", {"error": {"status": 422}}, R.format_error, {}),
    ("dropped mid-stream, small session", {"text": "a b c d", "drop_after_chunks": 2}, R.timeout, {}),
    ("dropped mid-stream, large session", {"text": "a b c d", "drop_after_chunks": 2}, R.context_overflow, {"approx_tokens": 7000, "context_length": 8000}),
    ("stalled stream", {"text": "a b c d", "stall_after_chunks": 1}, R.timeout, {}),
    ("mid-stream error event", {"text": "a b", "mid_stream_error": {"type": "server_error", "message": "upstream failed"}}, R.server_error, {}),
]

ANTHROPIC_ROWS: list[tuple[str, dict[str, Any], FailoverReason, dict[str, Any]]] = [
    ("401", {"error": {"status": 401}}, R.auth, {}),
    ("402", {"error": {"status": 402}}, R.billing, {}),
    ("404", {"error": {"status": 404}}, R.model_not_found, {}),
    ("429", {"error": {"status": 429}}, R.rate_limit, {}),
    (
        "429 long-context tier",
        {"error": {"status": 429, "body": {"type": "error", "error": {"type": "rate_limit_error", "message": "Extra usage is required for long context requests."}}}},
        R.long_context_tier,
        {},
    ),
    ("500", {"error": {"status": 500}}, R.server_error, {}),
    ("529", {"error": {"status": 529}}, R.overloaded, {}),
    (
        "400 thinking signature",
        {"error": {"status": 400, "body": {"type": "error", "error": {"type": "invalid_request_error", "message": "messages.1.content.0: Invalid `signature` in `thinking` block"}}}},
        R.thinking_signature,
        {},
    ),
    (
        "400 prompt too long",
        {"error": {"status": 400, "body": {"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long: 215000 tokens > 200000 maximum"}}}},
        R.context_overflow,
        {},
    ),
    ("mid-stream overloaded_error (HTTP 200)", {"text": "a b c", "mid_stream_error": {"type": "overloaded_error", "message": "Overloaded"}}, R.overloaded, {}),
    ("dropped mid-stream", {"text": "a b c d", "drop_after_chunks": 2}, R.timeout, {}),
]


RESPONSES_ROWS: list[tuple[str, dict[str, Any], FailoverReason, dict[str, Any]]] = [
    ("401", {"error": {"status": 401}}, R.auth, {}),
    ("429", {"error": {"status": 429}}, R.rate_limit, {}),
    ("500", {"error": {"status": 500}}, R.server_error, {}),
    ("mid-stream error event", {"text": "a b c", "mid_stream_error": {"type": "server_error", "message": "upstream failed", "after_chunks": 3}}, R.server_error, {}),
    ("dropped mid-stream", {"text": "a b c d", "drop_after_chunks": 3}, R.timeout, {}),
]


def responses(server: ScriptedProvider) -> ProviderTarget:
    return ProviderTarget("openai-codex", "gpt-5-codex", server.base_url, "codex_responses")


class TestClassifierOverRealHTTP:
    """Every row of the classifier table holds for a real response through the real SDK."""

    @pytest.mark.parametrize(("name", "step", "reason", "kwargs"), CHAT_ROWS, ids=[r[0] for r in CHAT_ROWS])
    async def test_chat_completions(self, server: ScriptedProvider, connector: PooledConnector, name: str, step: dict[str, Any], reason: FailoverReason, kwargs: dict[str, Any]) -> None:
        server.push(step)
        assert classify(await failure_of(connector, chat(server)), **kwargs).reason is reason

    @pytest.mark.parametrize(("name", "step", "reason", "kwargs"), ANTHROPIC_ROWS, ids=[r[0] for r in ANTHROPIC_ROWS])
    async def test_anthropic_messages(self, server: ScriptedProvider, connector: PooledConnector, name: str, step: dict[str, Any], reason: FailoverReason, kwargs: dict[str, Any]) -> None:
        server.push(step)
        assert classify(await failure_of(connector, messages(server)), **kwargs).reason is reason

    @pytest.mark.parametrize(("name", "step", "reason", "kwargs"), RESPONSES_ROWS, ids=[r[0] for r in RESPONSES_ROWS])
    async def test_codex_responses(self, server: ScriptedProvider, connector: PooledConnector, name: str, step: dict[str, Any], reason: FailoverReason, kwargs: dict[str, Any]) -> None:
        server.push(step)
        assert classify(await failure_of(connector, responses(server)), **kwargs).reason is reason

    async def test_hints_survive_the_wire(self, server: ScriptedProvider, connector: PooledConnector) -> None:
        server.push({"error": {"status": 429, "headers": {"retry-after": "3"}, "body": {"error": {"message": "slow down", "type": "requests", "reset_at": 1_900_000_000_000}}}})
        c = classify(await failure_of(connector, chat(server)))
        assert (c.status_code, c.retry_after, c.reset_hint) == (429, 3.0, 1_900_000_000_000)

    async def test_available_output_from_a_real_overflow(self, server: ScriptedProvider, connector: PooledConnector) -> None:
        body = {"type": "error", "error": {"type": "invalid_request_error", "message": "input length and `max_tokens` exceed context limit: 195000 + 8192 > 200000, decrease input length or `max_tokens` and try again"}}
        server.push({"error": {"status": 400, "body": body}})
        c = classify(await failure_of(connector, messages(server)))
        assert (c.reason, c.available_output_tokens, c.should_compress) == (R.context_overflow, 5000, False)


class Statuses:
    def __init__(self) -> None:
        self.updates: list[tuple[StatusKind, str]] = []

    async def __call__(self, kind: StatusKind, text: str) -> None:
        self.updates.append((kind, text))

    @property
    def kinds(self) -> list[StatusKind]:
        return [kind for kind, _ in self.updates]

    @property
    def texts(self) -> list[str]:
        return [text for _, text in self.updates]


class TestRecoveryEndToEnd:
    """The retry loop recovers over the wire: rotation, fallback, client rebuild, backoff, max_tokens."""

    async def test_rate_limit_rotates_to_the_second_key(self, server: ScriptedProvider, connector: PooledConnector, tmp_path: Any) -> None:
        server.push({"error": {"status": 429}}, {"text": "rotated fine"})
        pool = CredentialPool("openrouter", ["sk-first-key-000000", "sk-second-key-11111"], state_path=tmp_path / "openrouter.json")
        status = Statuses()
        done = await stream_with_recovery(request(), chain=FallbackChain(chat(server)), connector=connector, pools={"openrouter": pool}, retry=FAST_RETRY, on_status=status)
        assert done.message.content == "rotated fine"
        assert [r.headers["authorization"] for r in server.requests] == ["Bearer sk-first-key-000000", "Bearer sk-second-key-11111"]
        assert status.kinds == [StatusKind.rotate_credential]
        assert "sk-first" not in status.texts[0]
        assert pool.statistics().available == 1

    async def test_fallback_to_another_provider_and_protocol(self, server: ScriptedProvider, connector: PooledConnector) -> None:
        async with serve_scripted_provider() as second:
            server.push({"error": {"status": 404}})
            second.push({"text": "from the fallback"})
            chain = FallbackChain(chat(server), [messages(second)])
            status = Statuses()
            done = await stream_with_recovery(request(), chain=chain, connector=connector, retry=FAST_RETRY, on_status=status)
            assert done.message.content == "from the fallback"
            assert second.requests[0].path == "/v1/messages" and second.requests[0].body["model"] == "claude-test"
            assert status.kinds == [StatusKind.fallback] and "anthropic/claude-test" in status.texts[0]
            assert chain.current == messages(second)

    async def test_dropped_stream_rebuilds_the_client_then_succeeds(self, server: ScriptedProvider, connector: PooledConnector, clients: ClientPool) -> None:
        server.push({"text": "one two three four", "drop_after_chunks": 2}, {"text": "complete answer"})
        status = Statuses()
        done = await stream_with_recovery(request(), chain=FallbackChain(chat(server)), connector=connector, retry=FAST_RETRY, on_status=status)
        assert done.message.content == "complete answer"
        assert status.kinds == [StatusKind.partial_output, StatusKind.rebuild_client]
        assert clients.statistics().rebuilds == 1

    async def test_overloaded_backs_off_and_retries(self, server: ScriptedProvider, connector: PooledConnector) -> None:
        server.push({"error": {"status": 529}}, {"text": "a b c", "mid_stream_error": {"type": "overloaded_error", "message": "Overloaded", "after_chunks": 4}}, {"text": "third time"})
        status = Statuses()
        done = await stream_with_recovery(request(), chain=FallbackChain(messages(server)), connector=connector, retry=FAST_RETRY, on_status=status)
        assert done.message.content == "third time"
        assert status.kinds == [StatusKind.backoff, StatusKind.partial_output, StatusKind.backoff]
        assert len(server.requests) == 3

    async def test_overflow_lowers_max_tokens_on_the_wire(self, server: ScriptedProvider, connector: PooledConnector) -> None:
        body = {"type": "error", "error": {"type": "invalid_request_error", "message": "input length and `max_tokens` exceed context limit: 195000 + 8000 > 200000"}}
        server.push({"error": {"status": 400, "body": body}}, {"text": "short"})
        status = Statuses()
        req = attrs.evolve(request(), max_tokens=8000)
        done = await stream_with_recovery(req, chain=FallbackChain(messages(server)), connector=connector, retry=FAST_RETRY, on_status=status)
        assert done.message.content == "short"
        assert [r.body["max_tokens"] for r in server.requests] == [8000, 5000]
        assert status.kinds == [StatusKind.lower_max_tokens]

    @pytest.mark.parametrize("target", [chat, messages])
    async def test_lone_surrogate_repaired_before_anything_is_sent(self, server: ScriptedProvider, connector: PooledConnector, target: Any) -> None:
        server.push({"text": "clean"})
        status = Statuses()
        req = attrs.evolve(request(), messages=[HumanMessage("bad \ud800 char")])
        done = await stream_with_recovery(req, chain=FallbackChain(target(server)), connector=connector, retry=FAST_RETRY, on_status=status)
        assert done.message.content == "clean"
        (sent,) = server.requests
        assert "bad \ufffd char" in json.dumps(sent.body["messages"][0], ensure_ascii=False)
        assert status.kinds == [StatusKind.sanitize]

    async def test_overflow_without_room_asks_for_compression(self, server: ScriptedProvider, connector: PooledConnector) -> None:
        body = {"type": "error", "error": {"type": "invalid_request_error", "message": "input length and `max_tokens` exceed context limit: 199500 + 1000 > 200000"}}
        server.push({"error": {"status": 400, "body": body}})
        with pytest.raises(NeedsCompression):
            await stream_with_recovery(request(), chain=FallbackChain(messages(server)), connector=connector, retry=FAST_RETRY)
        assert len(server.requests) == 1


class TestCancellation:
    """Cancelling the loop closes the HTTP stream at once, mid-stream or mid-backoff."""

    async def test_cancel_mid_stream_closes_the_connection(self, server: ScriptedProvider, connector: PooledConnector) -> None:
        server.push({"text": "one two three four five", "chunk_delay": 0.05})
        with trio.CancelScope() as scope:

            async def cancel_on_first_text(event: object) -> None:
                scope.cancel()

            await stream_with_recovery(request(), chain=FallbackChain(chat(server)), connector=connector, on_event=cancel_on_first_text)
        assert scope.cancelled_caught
        with trio.fail_after(2):
            assert len(await server.wait_disconnects(1)) == 1

    async def test_cancel_during_backoff(self, server: ScriptedProvider, connector: PooledConnector) -> None:
        """Cancelled once the backoff is announced, the 30 s wait ends at once and no retry is sent.

        The cancel follows the announcement, not a deadline: on a loaded machine the first request
        alone can outlast any short one, and the cancel would then come before the backoff began.
        """
        server.push({"error": {"status": 503}}, {"text": "never asked for"})
        status = Statuses()
        slow = RetryConfig(base_delay=30.0, max_delay=60.0)
        with trio.fail_after(10), trio.CancelScope() as scope:

            async def cancel_at_backoff(kind: StatusKind, text: str) -> None:
                await status(kind, text)
                if kind is StatusKind.backoff:
                    scope.cancel()

            await stream_with_recovery(
                request(), chain=FallbackChain(chat(server)), connector=connector, retry=slow, on_status=cancel_at_backoff
            )
        assert scope.cancelled_caught
        assert status.kinds == [StatusKind.backoff]
        assert len(server.requests) == 1 and server.queued == 1
