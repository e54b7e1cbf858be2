"""Failures arrive as ProviderError with status/body/type kept; cancel and stalls close the connection."""

from __future__ import annotations

import anthropic
import httpx2
import openai
import pytest
import trio

from messages.chat import message_to_dict
from config.providers import StreamingConfig
from messages.events import TextDelta
from providers import (
    ProviderConnectionError,
    ProviderStatusError,
    ProviderTimeoutError,
    StreamStalled,
    make_adapter,
)

from .conftest import MODES, adapter_for, collect, expect_read_timeout, request, settings_for

SDK_STATUS_ERRORS = (openai.APIStatusError, anthropic.APIStatusError)


@pytest.mark.parametrize("mode", MODES)
class TestErrorStatuses:
    """An HTTP error becomes ProviderStatusError keeping status, body, headers, type and the SDK cause."""

    @pytest.mark.parametrize("status", [400, 401, 402, 403, 404, 413, 429, 500, 502, 503, 529])
    async def test_status_preserved(self, server, pool, mode, status):
        server.push({"error": {"status": status, "headers": {"retry-after": "7"}}})
        with pytest.raises(ProviderStatusError) as info:
            await collect(adapter_for(server, pool, mode), request())
        err = info.value
        assert err.status_code == status
        assert err.headers["retry-after"] == "7"
        assert isinstance(err.__cause__, SDK_STATUS_ERRORS)
        assert isinstance(err.body, dict) and "error" in err.body
        assert err.error_type
        if mode == "anthropic_messages":
            assert err.error_type == err.body["error"]["type"]

    async def test_rate_limit_types(self, server, pool, mode):
        server.push({"error": {"status": 429}})
        with pytest.raises(ProviderStatusError) as info:
            await collect(adapter_for(server, pool, mode), request())
        expected = "rate_limit_error" if mode == "anthropic_messages" else "rate_limit_exceeded"
        assert info.value.error_type == expected

    async def test_custom_json_body_kept_whole(self, server, pool, mode):
        body = {"error": {"message": "This model's maximum context length is 8192 tokens", "type": "invalid_request_error", "code": "context_length_exceeded"}}
        server.push({"error": {"status": 400, "body": body}})
        with pytest.raises(ProviderStatusError) as info:
            await collect(adapter_for(server, pool, mode), request())
        assert info.value.body == body
        assert "maximum context length is 8192" in str(info.value)

    async def test_text_body_kept(self, server, pool, mode):
        server.push({"error": {"status": 502, "body": "<html>Bad Gateway</html>"}})
        with pytest.raises(ProviderStatusError) as info:
            await collect(adapter_for(server, pool, mode), request())
        assert info.value.status_code == 502
        assert info.value.body == "<html>Bad Gateway</html>"

    async def test_exhausted_script_is_a_500(self, server, pool, mode):
        with pytest.raises(ProviderStatusError) as info:
            await collect(adapter_for(server, pool, mode), request())
        assert info.value.status_code == 500
        assert "script exhausted" in str(info.value)


@pytest.mark.parametrize("mode", MODES)
class TestMidStream:
    """An error event inside a 200 stream is a ProviderStatusError with status 200 and its type."""

    async def test_mid_stream_error_after_text(self, server, pool, mode):
        server.push({"text": "a b c d e f g h", "mid_stream_error": {"type": "overloaded_error", "message": "Overloaded", "after_chunks": 5}})
        seen: list[str] = []
        with pytest.raises(ProviderStatusError) as info:
            async with adapter_for(server, pool, mode).stream(request()) as events:
                async for event in events:
                    if isinstance(event, TextDelta):
                        seen.append(event.text)
        assert seen, "the error came after some text"
        err = info.value
        assert err.status_code == 200
        assert err.error_type == "overloaded_error"
        assert "Overloaded" in str(err)
        if mode == "anthropic_messages":
            assert isinstance(err.__cause__, anthropic.APIStatusError)
            assert err.__cause__.type == "overloaded_error"


@pytest.mark.parametrize("mode", MODES)
class TestBrokenStreams:
    """Dropped connections, stalls and slow servers are told apart."""

    async def test_dropped_connection(self, server, pool, mode):
        server.push({"text": "a b c d e f g h", "drop_after_chunks": 4})
        with pytest.raises(ProviderConnectionError) as info:
            await collect(adapter_for(server, pool, mode), request())
        assert not isinstance(info.value, ProviderTimeoutError)
        chain = [info.value.__cause__, info.value.__cause__.__cause__ if info.value.__cause__ else None]
        assert any(isinstance(c, (httpx2.TransportError, openai.APIConnectionError)) for c in chain)

    async def test_stall_raises_stream_stalled_and_closes(self, server, pool, mode):
        server.push({"text": "a b c d e f g h", "stall_after_chunks": 4})
        with trio.fail_after(5):
            with pytest.raises(StreamStalled) as info:
                await collect(adapter_for(server, pool, mode, stale=0.3), request())
            assert isinstance(info.value, ProviderTimeoutError)
            disconnects = await server.wait_disconnects(1)
        assert disconnects[0].request_index == 0

    async def test_read_timeout_before_first_byte(self, server, mode, short_read_pool):
        server.push({"text": "late", "delay_first_byte": 3})
        await expect_read_timeout(make_adapter(settings_for(server, mode), short_read_pool, StreamingConfig()))


@pytest.mark.parametrize("mode", MODES)
class TestCancellation:
    """Cancelling the consumer closes the HTTP connection at once; the server sees it."""

    async def test_cancel_mid_stream(self, server, pool, mode):
        server.push({"text": " ".join(["w"] * 50), "stall_after_chunks": 8})
        adapter = adapter_for(server, pool, mode)
        got_text = False
        with trio.CancelScope() as scope:
            async with adapter.stream(request()) as events:
                async for event in events:
                    if isinstance(event, TextDelta):
                        got_text = True
                        scope.cancel()
        assert got_text and scope.cancelled_caught
        with trio.fail_after(2):
            disconnects = await server.wait_disconnects(1)
        assert disconnects[0].request_index == 0

    async def test_cancel_before_first_byte(self, server, pool, mode):
        server.push({"text": "never", "delay_first_byte": 30})
        adapter = adapter_for(server, pool, mode)
        with trio.move_on_after(0.3) as scope:
            await collect(adapter, request())
        assert scope.cancelled_caught
        with trio.fail_after(2):
            await server.wait_disconnects(1)

    async def test_next_call_after_cancel_works(self, server, pool, mode):
        server.push({"text": " ".join(["w"] * 50), "stall_after_chunks": 8}, {"text": "fresh answer"})
        adapter = adapter_for(server, pool, mode)
        # Cancelled once its text arrives: the stalled step was taken by this call. (A fixed delay let a
        # loaded machine cancel the call before it reached the server, which then gave the stall to
        # the next call.)
        with trio.CancelScope() as scope:
            async with adapter.stream(request()) as events:
                async for event in events:
                    if isinstance(event, TextDelta):
                        scope.cancel()
        assert scope.cancelled_caught
        events = await collect(adapter, request())
        assert message_to_dict(events[-1].message)["content"] == "fresh answer"
