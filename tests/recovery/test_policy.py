"""The retry loop's decisions, in process, with backoff on Trio's autojump clock."""

from __future__ import annotations

import random

import httpx2
import pytest
import trio

from messages.chat import messages_from_dicts
from config.recovery import RetryConfig
from messages.events import TextDelta
from providers.errors import ProviderConnectionError, ProviderStatusError, ProviderTimeoutError
from providers.recovery import (
    Backoff,
    CredentialPool,
    FailoverReason,
    FallbackChain,
    NeedsCompression,
    ProviderTarget,
    RecoveryExhausted,
    StatusKind,
    backoff_delay,
    stream_with_recovery,
)
from providers.types import ChatRequest, StreamEvent

from .fakes import FakeConnector, Outcome

PRIMARY = ProviderTarget("openrouter", "primary-model", "http://primary/v1", "chat_completions")
SECOND = ProviderTarget("anthropic", "second-model", "http://second", "anthropic_messages")
EPOCH = 1_800_000_000.0


def err(status: int, message: str = "boom", **kw: object) -> ProviderStatusError:
    return ProviderStatusError(f"HTTP {status}", status_code=status, body={"error": {"message": message}}, **kw)  # type: ignore[arg-type]  # the cases' keyword arguments vary; the call checks them at run time


def request(**kw: object) -> ChatRequest:
    base: dict[str, object] = {"messages": [{"role": "user", "content": "hi"}], "tools": [], "model": "ignored"}
    base.update(kw)
    base["messages"] = messages_from_dicts(base["messages"])  # type: ignore[arg-type]  # the cases give dicts, as a provider's payload is
    return ChatRequest(**base)  # type: ignore[arg-type]  # the cases' keyword arguments vary; the call checks them at run time


class Recorder:
    """Collects forwarded events and status updates."""

    def __init__(self) -> None:
        self.events: list[StreamEvent] = []
        self.status: list[tuple[StatusKind, str]] = []

    async def on_event(self, event: StreamEvent) -> None:
        self.events.append(event)

    async def on_status(self, kind: StatusKind, text: str) -> None:
        self.status.append((kind, text))

    @property
    def kinds(self) -> list[StatusKind]:
        return [kind for kind, _ in self.status]

    @property
    def texts(self) -> list[str]:
        return [text for _, text in self.status]


async def run(
    connector: FakeConnector,
    rec: Recorder,
    *,
    chain: FallbackChain | None = None,
    pools: dict[str, CredentialPool] | None = None,
    req: ChatRequest | None = None,
    retry: RetryConfig | None = None,
    **kw: object,
) -> tuple[str, float]:
    start = trio.current_time()
    finished = await stream_with_recovery(
        req or request(),
        chain=chain or FallbackChain(PRIMARY),
        connector=connector,
        pools=pools,
        retry=retry,
        backoff=Backoff(retry or RetryConfig(), seed=42),
        on_event=rec.on_event,
        on_status=rec.on_status,
        **kw,  # type: ignore[arg-type]  # the cases' keyword arguments vary; the call checks them at run time
    )
    return finished.message.content, trio.current_time() - start


def seeded_delays(n: int, config: RetryConfig | None = None) -> list[float]:
    config = config or RetryConfig()
    rng = random.Random(42)
    return [
        backoff_delay(i, base_delay=config.base_delay, max_delay=config.max_delay, jitter_ratio=config.jitter_ratio, rng=rng)
        for i in range(1, n + 1)
    ]


def epoch_clock() -> float:
    return EPOCH + trio.current_time()


class TestBackoffRetries:
    """Retryable failures wait the jittered backoff and retry the same target."""

    async def test_two_overloads_then_success(self, autojump_clock: trio.testing.MockClock) -> None:
        connector = FakeConnector([Outcome("a b", err(529)), Outcome("", err(503)), Outcome("fine now")])
        rec = Recorder()
        content, elapsed = await run(connector, rec)
        assert content == "fine now"
        assert elapsed == pytest.approx(sum(seeded_delays(2)))
        assert rec.kinds == [StatusKind.partial_output, StatusKind.backoff, StatusKind.backoff]
        assert "retry 2 of 3" in rec.texts[-1]
        assert connector.open_streams == 0

    async def test_retry_after_header_is_honoured(self, autojump_clock: trio.testing.MockClock) -> None:
        connector = FakeConnector([Outcome("", err(503, headers={"retry-after": "100"})), Outcome("ok")])
        _, elapsed = await run(connector, Recorder(), retry=RetryConfig(jitter_ratio=0.0))
        assert elapsed == pytest.approx(100.0)

    async def test_exhausted_without_fallback(self, autojump_clock: trio.testing.MockClock) -> None:
        connector = FakeConnector([Outcome("", err(500)) for _ in range(4)])
        rec = Recorder()
        with pytest.raises(RecoveryExhausted) as info:
            await run(connector, rec)
        assert info.value.classified is not None and info.value.classified.reason is FailoverReason.server_error
        assert rec.kinds == [StatusKind.backoff] * 3 + [StatusKind.give_up]
        assert trio.current_time() == pytest.approx(sum(seeded_delays(3)))
        assert len(connector.calls) == 4

    async def test_exhausted_retries_fall_back(self, autojump_clock: trio.testing.MockClock) -> None:
        connector = FakeConnector([Outcome("", err(502)) for _ in range(2)] + [Outcome("from second")])
        rec = Recorder()
        content, _ = await run(connector, rec, chain=FallbackChain(PRIMARY, [SECOND]), retry=RetryConfig(max_retries=1))
        assert content == "from second"
        assert rec.kinds == [StatusKind.backoff, StatusKind.fallback]
        assert [c.request.model for c in connector.calls] == ["primary-model", "primary-model", "second-model"]

    async def test_non_retryable_format_error_falls_back_at_once(self, autojump_clock: trio.testing.MockClock) -> None:
        connector = FakeConnector([Outcome("", err(400, "roles must alternate")), Outcome("ok")])
        rec = Recorder()
        _, elapsed = await run(connector, rec, chain=FallbackChain(PRIMARY, [SECOND]))
        assert elapsed == 0
        assert rec.kinds == [StatusKind.fallback]
        assert "second-model" in rec.texts[0]

    async def test_not_found_without_fallback_gives_guidance(self, autojump_clock: trio.testing.MockClock) -> None:
        rec = Recorder()
        with pytest.raises(RecoveryExhausted, match="pick another with --model"):
            await run(FakeConnector([Outcome("", err(404, "no such model"))]), rec)
        assert rec.kinds == [StatusKind.give_up]


class TestCredentialRotation:
    """Auth, billing and rate-limit failures rotate keys before anything else."""

    async def test_rate_limit_rotates_without_waiting(self, autojump_clock: trio.testing.MockClock) -> None:
        pool = CredentialPool("openrouter", ["k1", "k2"], clock=epoch_clock)
        connector = FakeConnector([Outcome("", err(429, "Rate limit reached")), Outcome("ok")])
        rec = Recorder()
        _, elapsed = await run(connector, rec, pools={"openrouter": pool})
        assert elapsed == 0
        assert [c.api_key for c in connector.calls] == ["k1", "k2"]
        assert rec.kinds == [StatusKind.rotate_credential]
        assert "k1" not in rec.texts[0] and "openrouter#1" in rec.texts[0]
        assert pool.statistics().next_available_at == pytest.approx(EPOCH + 3600)

    async def test_provider_reset_time_sets_the_cooldown(self, autojump_clock: trio.testing.MockClock) -> None:
        pool = CredentialPool("openrouter", ["k1", "k2"], clock=epoch_clock)
        limited = ProviderStatusError("HTTP 429", status_code=429, body={"error": {"message": "rate limited", "reset_at": (EPOCH + 42) * 1000}})
        await run(FakeConnector([Outcome("", limited), Outcome("ok")]), Recorder(), pools={"openrouter": pool})
        assert pool.statistics().next_available_at == pytest.approx(EPOCH + 42)

    async def test_single_key_rate_limit_falls_back_at_once(self, autojump_clock: trio.testing.MockClock) -> None:
        pool = CredentialPool("openrouter", ["only"], clock=epoch_clock)
        connector = FakeConnector([Outcome("", err(429, "Rate limit reached")), Outcome("ok")])
        rec = Recorder()
        _, elapsed = await run(connector, rec, pools={"openrouter": pool}, chain=FallbackChain(PRIMARY, [SECOND]))
        assert elapsed == 0
        assert rec.kinds == [StatusKind.fallback]
        assert [c.target for c in connector.calls] == [PRIMARY, SECOND]

    async def test_single_key_rate_limit_without_fallback_backs_off(self, autojump_clock: trio.testing.MockClock) -> None:
        pool = CredentialPool("openrouter", ["only"], clock=epoch_clock)
        connector = FakeConnector([Outcome("", err(429, "Rate limit reached")), Outcome("ok")])
        rec = Recorder()
        _, elapsed = await run(connector, rec, pools={"openrouter": pool})
        assert rec.kinds == [StatusKind.backoff]
        assert elapsed == pytest.approx(seeded_delays(1)[0])
        assert [c.api_key for c in connector.calls] == ["only", "only"]

    async def test_auth_rotates_through_keys_then_falls_back(self, autojump_clock: trio.testing.MockClock) -> None:
        pools = {"openrouter": CredentialPool("openrouter", ["k1", "k2"], clock=epoch_clock)}
        connector = FakeConnector([Outcome("", err(401, "bad key")), Outcome("", err(401, "bad key")), Outcome("ok")])
        rec = Recorder()
        await run(connector, rec, pools=pools, chain=FallbackChain(PRIMARY, [SECOND]))
        assert rec.kinds == [StatusKind.rotate_credential, StatusKind.fallback]
        assert [(c.target.provider, c.api_key) for c in connector.calls] == [("openrouter", "k1"), ("openrouter", "k2"), ("anthropic", None)]

    async def test_every_key_cooling_down_falls_back(self, autojump_clock: trio.testing.MockClock) -> None:
        pool = CredentialPool("openrouter", ["k1"], clock=epoch_clock)
        await pool.mark_exhausted(pool.credentials[0], status_code=429)
        connector = FakeConnector([Outcome("ok")])
        rec = Recorder()
        await run(connector, rec, pools={"openrouter": pool}, chain=FallbackChain(PRIMARY, [SECOND]))
        assert rec.kinds == [StatusKind.fallback]
        assert connector.calls[0].target == SECOND


class TestRequestRewrites:
    """Reasoning stripping, max_tokens lowering, compression and sanitising act on the request."""

    async def test_thinking_signature_strips_reasoning_once(self, autojump_clock: trio.testing.MockClock) -> None:
        history = [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "x", "anthropic_content": [{"type": "thinking", "thinking": "t", "signature": "s"}]},
        ]
        bad = err(400, "messages.1.content.0: Invalid `signature` in `thinking` block")
        connector = FakeConnector([Outcome("", bad), Outcome("ok")])
        rec = Recorder()
        await run(connector, rec, req=request(messages=history))
        assert rec.kinds == [StatusKind.strip_reasoning]
        assert connector.calls[1].request.messages[1].extras["anthropic_content"] == []

        again = FakeConnector([Outcome("", bad), Outcome("", bad)])
        with pytest.raises(RecoveryExhausted):
            await run(again, Recorder(), req=request(messages=history))
        assert len(again.calls) == 2

    async def test_overflow_with_room_lowers_max_tokens_then_compresses(self, autojump_clock: trio.testing.MockClock) -> None:
        overflow = err(400, "input length and `max_tokens` exceed context limit: 190000 + 32000 > 200000")
        connector = FakeConnector([Outcome("", overflow), Outcome("ok")])
        rec = Recorder()
        await run(connector, rec, req=request(max_tokens=32000))
        assert connector.calls[1].request.max_tokens == 10000
        assert rec.kinds == [StatusKind.lower_max_tokens]

        twice = FakeConnector([Outcome("", overflow), Outcome("", overflow)])
        with pytest.raises(NeedsCompression):
            await run(twice, Recorder(), req=request(max_tokens=32000))

    @pytest.mark.parametrize("status, message", [(413, "too large"), (400, "prompt is too long: 250000 tokens > 200000 maximum")])
    async def test_compression_is_the_callers_job(self, autojump_clock: trio.testing.MockClock, status: int, message: str) -> None:
        rec = Recorder()
        with pytest.raises(NeedsCompression) as info:
            await run(FakeConnector([Outcome("", err(status, message))]), rec, chain=FallbackChain(PRIMARY, [SECOND]))
        assert info.value.classified.should_compress
        assert rec.kinds == [StatusKind.compress]

    async def test_disconnect_on_large_session_means_compress(self, autojump_clock: trio.testing.MockClock) -> None:
        dropped = httpx2.RemoteProtocolError("peer closed connection without sending complete message body")
        with pytest.raises(NeedsCompression):
            await run(FakeConnector([Outcome("", dropped)]), Recorder(), approx_tokens=150_000, context_length=lambda model: 200_000)

    async def test_history_sanitised_before_sending(self, autojump_clock: trio.testing.MockClock) -> None:
        connector = FakeConnector([Outcome("ok")])
        rec = Recorder()
        await run(connector, rec, req=request(messages=[{"role": "user", "content": "bad \ud800 char"}]))
        assert connector.calls[0].request.messages[0].content == "bad \ufffd char"
        assert rec.kinds == [StatusKind.sanitize]


class TestTransportRecovery:
    """A transport failure rebuilds the client once, then backs off."""

    async def test_rebuild_once_then_backoff(self, autojump_clock: trio.testing.MockClock) -> None:
        pool = CredentialPool("openrouter", ["k1"], clock=epoch_clock)
        connector = FakeConnector(
            [Outcome("", ProviderConnectionError("server disconnected")), Outcome("", ProviderTimeoutError("read timed out")), Outcome("ok")]
        )
        rec = Recorder()
        _, elapsed = await run(connector, rec, pools={"openrouter": pool})
        assert connector.rebuilds == [(PRIMARY, "k1")]
        assert rec.kinds == [StatusKind.rebuild_client, StatusKind.backoff]
        assert elapsed == pytest.approx(seeded_delays(1)[0])


class TestPartialOutput:
    """Text shown before a failure is never spliced into the result."""

    async def test_restart_after_partial_text(self, autojump_clock: trio.testing.MockClock) -> None:
        connector = FakeConnector([Outcome("half an", ProviderConnectionError("server disconnected")), Outcome("whole answer")])
        rec = Recorder()
        content, _ = await run(connector, rec)
        assert content == "whole answer"
        assert rec.kinds[0] is StatusKind.partial_output
        texts = [e.text for e in rec.events if isinstance(e, TextDelta)]
        assert texts == ["half ", "an ", "whole ", "answer "]  # shown live; the UI drops the first two on the status

    async def test_partial_text_kept_when_exhausted(self, autojump_clock: trio.testing.MockClock) -> None:
        failing = [Outcome("partial words", err(500)) for _ in range(2)]
        with pytest.raises(RecoveryExhausted) as info:
            await run(FakeConnector(failing), Recorder(), retry=RetryConfig(max_retries=1))
        assert info.value.partial_text == "partial words "


class TestBoundaries:
    """Bugs are not retried; cancellation stops the loop at once and leaves nothing open."""

    async def test_programming_error_propagates(self, autojump_clock: trio.testing.MockClock) -> None:
        connector = FakeConnector([Outcome("", TypeError("adapter bug")), Outcome("ok")])
        with pytest.raises(TypeError):
            await run(connector, Recorder())
        assert len(connector.calls) == 1

    async def test_cancel_during_backoff(self, autojump_clock: trio.testing.MockClock) -> None:
        connector = FakeConnector([Outcome("", err(503)), Outcome("ok")])
        rec = Recorder()
        with trio.move_on_after(1.0) as scope:
            await run(connector, rec)
        assert scope.cancelled_caught
        assert rec.kinds == [StatusKind.backoff]
        assert len(connector.calls) == 1 and connector.open_streams == 0

    async def test_cancel_mid_stream_closes_it(self, autojump_clock: trio.testing.MockClock) -> None:
        connector = FakeConnector([Outcome("one two three four")])
        with trio.CancelScope() as scope:

            async def cancel_on_second(event: StreamEvent) -> None:
                if isinstance(event, TextDelta) and event.text == "two ":
                    scope.cancel()

            await stream_with_recovery(request(), chain=FallbackChain(PRIMARY), connector=connector, on_event=cancel_on_second)
        assert connector.open_streams == 0



class TestPartialToolCalls:
    """A failure after a tool call started streaming is also announced as partial output."""

    async def test_tool_call_shown_then_failure(self, autojump_clock: trio.testing.MockClock) -> None:
        connector = FakeConnector([Outcome("", err(500), tool_call="terminal"), Outcome("ok")])
        rec = Recorder()
        await run(connector, rec)
        assert rec.kinds == [StatusKind.partial_output, StatusKind.backoff]

    async def test_usage_alone_is_not_partial_output(self, autojump_clock: trio.testing.MockClock) -> None:
        connector = FakeConnector([Outcome("", err(500), usage_first=True), Outcome("ok")])
        rec = Recorder()
        await run(connector, rec)
        assert rec.kinds == [StatusKind.backoff]
