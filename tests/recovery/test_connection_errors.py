"""A host name that does not resolve, or a refused connection: a connection error naming the host, retried briefly."""

from __future__ import annotations

import socket

import httpx2
import pytest
import trio

from config.recovery import RetryConfig
from providers.errors import ProviderConnectionError
from providers.recovery import FailoverReason, FallbackChain, RecoveryExhausted, StatusKind, classify
from providers.recovery.classifier import request_host

from .fakes import FakeConnector, Outcome
from .test_policy import PRIMARY, SECOND, Recorder, run


def unresolvable(host: str = "api.example.com") -> ProviderConnectionError:
    """What the adapter raises when getaddrinfo fails: ours, from httpx's, from the socket's."""
    gai = socket.gaierror(socket.EAI_NONAME, "Name or service not known")
    transport = httpx2.ConnectError(str(gai), request=httpx2.Request("POST", f"https://{host}/v1/chat/completions"))
    transport.__cause__ = gai
    error = ProviderConnectionError("Connection error.")
    error.__cause__ = transport
    return error


class TestClassifyNameResolution:
    """A name-resolution failure is a connection error that says which host, not a timeout."""

    def test_gaierror_chain(self) -> None:
        classified = classify(unresolvable())
        assert classified.reason is FailoverReason.connection
        assert classified.message == "cannot resolve api.example.com"
        assert classified.retryable and classified.should_fallback

    @pytest.mark.parametrize(
        "text",
        ["[Errno -3] Temporary failure in name resolution", "[Errno 8] nodename nor servname provided, or not known"],
    )
    def test_message_wordings(self, text: str) -> None:
        assert classify(httpx2.ConnectError(text)).reason is FailoverReason.connection

    def test_a_timeout_stays_a_timeout(self) -> None:
        assert classify(httpx2.ConnectTimeout("timed out")).reason is FailoverReason.timeout


class TestClassifyRefused:
    """A refused connection is a connection error naming host and port, not a timeout."""

    def test_socket_wording(self) -> None:
        request = httpx2.Request("POST", "http://127.0.0.1:9/v1/chat/completions")
        classified = classify(httpx2.ConnectError("[Errno 111] Connection refused", request=request))
        assert classified.reason is FailoverReason.connection
        assert classified.message == "connection refused by 127.0.0.1:9 (is the server running?)"

    def test_trio_wording_and_default_port(self) -> None:
        request = httpx2.Request("POST", "https://llm.example.com/v1/chat/completions")
        error = httpx2.ConnectError("all attempts to connect to llm.example.com:443 failed", request=request)
        classified = classify(error)
        assert classified.reason is FailoverReason.connection
        assert classified.message == "connection refused by llm.example.com:443 (is the server running?)"

    def test_host_unknown(self) -> None:
        assert request_host(ValueError("no request here")) is None
        assert classify(httpx2.ConnectError("Name or service not known")).message == "cannot resolve the provider's host name"


class TestConnectionBudget:
    """Connection errors get retry.connection_retries quick tries, then fall back or give up."""

    async def test_gives_up_after_its_own_budget(self, autojump_clock: trio.testing.MockClock) -> None:
        connector = FakeConnector([Outcome("", unresolvable()) for _ in range(3)])
        rec = Recorder()
        with pytest.raises(RecoveryExhausted) as info:
            await run(connector, rec, retry=RetryConfig(connection_retries=2, connection_delay=0.5))
        assert rec.kinds == [StatusKind.backoff, StatusKind.backoff, StatusKind.give_up]
        assert trio.current_time() == pytest.approx(1.0)  # not the 5 + 10 + 20 s of the backoff
        assert "cannot resolve api.example.com" in str(info.value)
        assert len(connector.calls) == 3

    async def test_falls_back_when_spent(self, autojump_clock: trio.testing.MockClock) -> None:
        connector = FakeConnector([Outcome("", unresolvable()), Outcome("from second")])
        rec = Recorder()
        content, elapsed = await run(
            connector, rec, chain=FallbackChain(PRIMARY, [SECOND]), retry=RetryConfig(connection_retries=0)
        )
        assert content == "from second"
        assert rec.kinds == [StatusKind.fallback]
        assert elapsed == 0
