"""Where a model call's CPU goes, layer by layer (prints its figures; not a test).

The same streamed Chat Completions reply (the side-by-side harness's fake model: a ``terminal`` call,
then usage and ``[DONE]``) is fetched ``--concurrency`` at a time, each way below, and this process's CPU
per call is printed. Each way adds one layer to the one before:

    httpx2            a bare httpx2 streaming POST, body read to its end
    + transport       through the pool's transport (stale guard, shards)
    + SDK post        the body posted through the OpenAI SDK's ``client.post``, read raw
    + SDK stream      ... and read as the SDK's own ``AsyncStream`` of JSON objects
    + our stream      ... read as ``providers.sse.openai_event_stream`` instead
    adapter           the whole adapter (pooled client, our stream, events, background close)

Run: .venv/bin/python bench/bench_call_layers.py [--calls 20] [--concurrency 50] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx2
import openai
import trio
from openai.types.chat import ChatCompletion

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from config.providers import StreamingConfig  # noqa: E402
from messages.chat import messages_from_dicts  # noqa: E402
from providers import ChatRequest, ClientPool, ProviderSettings, make_adapter  # noqa: E402
from providers._raw import post_stream  # noqa: E402
from providers._shards import ShardedTransport  # noqa: E402
from providers._stale import StaleGuardTransport  # noqa: E402
from providers.sse import openai_event_stream  # noqa: E402

MESSAGES = [{"role": "system", "content": "x" * 3000}, {"role": "user", "content": "go [[bench tools=1]]"}]
BODY = {"model": "m", "messages": MESSAGES, "stream": True, "stream_options": {"include_usage": True}}
LIMITS = httpx2.Limits(max_connections=1000, max_keepalive_connections=1000)


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def _per_call(one: Callable[[], Awaitable[None]], calls: int, concurrency: int) -> float:
    """CPU ms per call, ``concurrency`` loops of ``calls`` calls (after one warm-up call per loop)."""

    async def loop(count: int) -> None:
        for _ in range(count):
            await one()

    async with trio.open_nursery() as nursery:
        for _ in range(concurrency):
            nursery.start_soon(loop, 1)
    start = _cpu()
    async with trio.open_nursery() as nursery:
        for _ in range(concurrency):
            nursery.start_soon(loop, calls)
    return (_cpu() - start) / (calls * concurrency) * 1000


def _ways(url: str, pool: ClientPool) -> dict[str, Callable[[], Awaitable[None]]]:
    bare = httpx2.AsyncClient(limits=LIMITS)
    transport = StaleGuardTransport(ShardedTransport(lambda shard: httpx2.AsyncHTTPTransport(limits=shard), LIMITS))
    wrapped = httpx2.AsyncClient(transport=transport, timeout=httpx2.Timeout(60))
    sdk = openai.AsyncOpenAI(api_key="k", base_url=url, max_retries=0, http_client=wrapped)
    encoded = json.dumps(BODY).encode()
    headers = {"authorization": "Bearer k", "content-type": "application/json"}

    async def raw(client: httpx2.AsyncClient) -> None:
        async with client.stream("POST", f"{url}/chat/completions", content=encoded, headers=headers) as response:
            async for _ in response.aiter_bytes():
                pass

    async def posted(stream_cls: type, read: Callable[[Any], Awaitable[None]]) -> None:
        stream = await post_stream(sdk, "/chat/completions", BODY, cast_to=ChatCompletion, stream_cls=stream_cls)
        try:
            await read(stream)
        finally:
            await stream.close()

    async def read_raw(stream: Any) -> None:
        async for _ in stream.response.aiter_bytes():
            pass

    async def read_items(stream: Any) -> None:
        async for _ in stream:
            pass

    settings = ProviderSettings(provider="bench", model="m", base_url=url, api_mode="chat_completions", api_key="k")
    adapter = make_adapter(settings, pool, StreamingConfig())
    request = ChatRequest(messages=messages_from_dicts(MESSAGES), tools=[], model="m")

    async def whole() -> None:
        async with adapter.stream(request) as events:
            async for _ in events:
                pass

    return {
        "httpx2": lambda: raw(bare),
        "+ transport": lambda: raw(wrapped),
        "+ SDK post": lambda: posted(openai.AsyncStream[object], read_raw),
        "+ SDK stream": lambda: posted(openai.AsyncStream[object], read_items),
        "+ our stream": lambda: posted(openai_event_stream(openai), read_items),
        "adapter": whole,
    }


# The way each one adds its layer to (the two streams are alternatives on top of the SDK's post).
BASES = {"+ transport": "httpx2", "+ SDK post": "+ transport", "+ SDK stream": "+ SDK post",
         "+ our stream": "+ SDK post", "adapter": "+ our stream"}


async def main(calls: int, concurrency: int, rounds: int, latency: float) -> None:
    fake = subprocess.Popen(
        [sys.executable, str(ROOT / "bench/vs_hermes/fake_model.py"), "--port", "0", "--latency", str(latency)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    try:
        assert fake.stdout is not None
        url = fake.stdout.readline().strip()
        pool = await ClientPool.create(StreamingConfig())
        ways = _ways(url, pool)
        figures: dict[str, list[float]] = {name: [] for name in ways}
        # Rounds alternate the ways, so that a change in the machine's load touches them all alike.
        for _ in range(rounds):
            for name, one in ways.items():
                figures[name].append(await _per_call(one, calls, concurrency))
        await pool.closer.wait_idle()
        await pool.aclose()
    finally:
        fake.terminate()
        fake.wait()
    print(f"{concurrency} concurrent streams x {calls} calls, {rounds} rounds; CPU of this process per call (median)")
    print("| way | ms per call | added to |")
    print("| --- | --- | --- |")
    medians = {name: statistics.median(values) for name, values in figures.items()}
    for name, median in medians.items():
        base = BASES.get(name)
        added = f"{median - medians[base]:+.2f} ms to {base}" if base else ""
        print(f"| {name} | {median:.2f} | {added} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--latency", type=float, default=0.05)
    args = parser.parse_args()
    trio.run(main, args.calls, args.concurrency, args.rounds, args.latency)
