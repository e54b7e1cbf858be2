"""Stale-stream detection: no *chunk* for stale_timeout, whatever the bytes do."""

from __future__ import annotations

import anthropic
import httpx2
import openai
import pytest
import trio

from messages.chat import message_to_dict
from config.providers import StreamingConfig
from providers import StreamStalled, make_adapter
from providers.anthropic_messages import AnthropicMessagesAdapter
from providers.chat_completions import ChatCompletionsAdapter
from providers.codex_responses import CodexResponsesAdapter

from .conftest import MODES, adapter_for, collect, expect_read_timeout, request, settings_for


@pytest.mark.parametrize("mode", MODES)
class TestStaleGuard:
    """Pooled clients: deadline per socket read, chunks counted per event."""

    async def test_keepalive_bytes_do_not_hide_a_stall(self, server, pool, mode):
        # Comments every 50 ms keep the socket busy (the read timeout never fires), but no chunk arrives.
        server.push({"text": "a b c d e f", "stall_after_chunks": 4, "keepalive_every": 0.05})
        start = trio.current_time()
        with trio.fail_after(5):
            with pytest.raises(StreamStalled) as info:
                await collect(adapter_for(server, pool, mode, stale=0.4), request())
        assert trio.current_time() - start >= 0.4
        assert isinstance(info.value.__cause__, (httpx2.ReadTimeout, openai.APITimeoutError))
        with trio.fail_after(2):
            await server.wait_disconnects(1)

    async def test_slow_but_steady_stream_is_not_stale(self, server, pool, mode):
        # Each chunk comes within the stale timeout, though the whole reply takes longer.
        server.push({"text": "a b c", "chunk_delay": 0.05})
        start = trio.current_time()
        events = await collect(adapter_for(server, pool, mode, stale=0.25), request())
        assert message_to_dict(events[-1].message)["content"] == "a b c"
        assert trio.current_time() - start > 0.25

    async def test_read_timeout_first_when_shorter(self, server, mode, short_read_pool):
        server.push({"text": "a b c d e f", "stall_after_chunks": 4})
        adapter = make_adapter(settings_for(server, mode), short_read_pool, StreamingConfig(stale_timeout_seconds=30))
        await expect_read_timeout(adapter)


@pytest.mark.parametrize("mode", MODES)
class TestUnpooledClient:
    """A client built elsewhere (no guard transport) still gets stale detection."""

    async def test_stall_detected(self, server, mode, ssl_context):
        http = httpx2.AsyncClient(verify=ssl_context)
        if mode == "anthropic_messages":
            client = anthropic.AsyncAnthropic(api_key="k", base_url=server.root_url, max_retries=0, http_client=http)
            adapter = AnthropicMessagesAdapter(lambda: client, stale_timeout=0.3, output_cap=lambda model: 1024)
        else:
            client = openai.AsyncOpenAI(api_key="k", base_url=server.base_url, max_retries=0, http_client=http)
            cls = CodexResponsesAdapter if mode == "codex_responses" else ChatCompletionsAdapter
            adapter = cls(lambda: client, stale_timeout=0.3)
        try:
            server.push({"text": "a b c d e f", "stall_after_chunks": 4, "keepalive_every": 0.05})
            with trio.fail_after(5):
                with pytest.raises(StreamStalled):
                    await collect(adapter, request())
                await server.wait_disconnects(1)
        finally:
            await client.close()
