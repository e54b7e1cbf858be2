"""A complete reply reaches the caller when its protocol's last event is parsed, not when the body ends;
the rest of the body is read in the background and the connection is reused."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from messages.chat import message_to_dict
from config.providers import StreamingConfig
from providers import ClientPool
from providers._shards import ShardedTransport

from .conftest import MODES, adapter_for, collect, request, settings_for

# The scripted server keeps each body open this long after its last event (virtual seconds).
HOLD_END = 1.5


@pytest.fixture
def lagging_clock() -> trio.testing.MockClock:
    """Virtual time that jumps only after 0.2 s of real idleness: loopback I/O completes first."""
    return trio.testing.MockClock(autojump_threshold=0.2)


class TestCompleteReply:
    """The reply does not wait for a lagging body end, and nothing is lost or leaked."""

    @pytest.mark.parametrize("mode", MODES)
    async def test_reply_returns_before_the_body_ends(self, lagging_clock, server, pool, mode):
        adapter = adapter_for(server, pool, mode)
        server.push({"text": "one two three", "hold_end": HOLD_END}, {"text": "next"})
        start = trio.current_time()
        events = await collect(adapter, request())
        assert trio.current_time() - start < HOLD_END / 2
        assert message_to_dict(events[-1].message)["content"] == "one two three"
        assert pool.closer.running == 1, "the body's end is awaited in the background"
        await pool.closer.wait_idle()
        assert trio.current_time() - start >= HOLD_END
        # The connection went back to the pool: the next request rides on it.
        assert message_to_dict((await collect(adapter, request()))[-1].message)["content"] == "next"
        first, second = server.requests
        assert first.client_port == second.client_port
        assert not server.disconnects

    async def test_pool_close_waits_for_background_finishes(self, lagging_clock, server, ssl_context):
        pool = ClientPool(StreamingConfig(read_timeout_seconds=5), ssl_context)
        server.push({"text": "done", "hold_end": HOLD_END})
        await collect(adapter_for(server, pool, "chat_completions"), request())
        assert pool.closer.running == 1
        await pool.aclose()
        assert pool.closer.running == 0
        assert not server.disconnects, "the body was read to its end before the client closed"

    async def test_a_stream_left_early_is_closed_at_once(self, lagging_clock, server, pool):
        adapter = adapter_for(server, pool, "chat_completions")
        server.push({"text": "a b c d e f", "chunk_delay": 1.0})
        async with adapter.stream(request()) as events:
            await events.__anext__()
        assert pool.closer.running == 0
        with trio.fail_after(1):
            await server.wait_disconnects(1)


class TestConnectionsKept:
    """Streams that ran at once keep their connections for the next round (httpx keeps only 20), in shards."""

    async def test_forty_concurrent_streams_reuse_their_connections(self, server, pool):
        adapter = adapter_for(server, pool, "chat_completions")

        async def round_of(count: int) -> set[int]:
            first = len(server.requests)
            server.push(*({"text": f"reply {n}", "delay_first_byte": 0.05} for n in range(count)))
            async with trio.open_nursery() as nursery:
                for _ in range(count):
                    nursery.start_soon(collect, adapter, request())
            await pool.closer.wait_idle()
            return {r.client_port for r in server.requests[first:]}

        opened = await round_of(40)
        assert len(opened) == 40
        assert await round_of(40) <= opened
        # 40 at once took five shards of 8: no request scanned more than one shard's connections.
        transport = pool.get_openai(settings_for(server, "chat_completions"))._client._transport._inner
        assert isinstance(transport, ShardedTransport) and transport.shards == 5

    async def test_sequential_requests_share_one_connection(self, server, pool):
        adapter = adapter_for(server, pool, "chat_completions")
        for n in range(3):
            server.push({"text": f"reply {n}"})
            await collect(adapter, request())
            await pool.closer.wait_idle()
        assert len({r.client_port for r in server.requests}) == 1
