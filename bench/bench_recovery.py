"""Figures for provider error recovery: classifier and repair cost, pool select cost,
and the retry loop's per-event overhead over a real scripted stream.

Run: .venv/bin/python bench/bench_recovery.py
"""

from __future__ import annotations

import json
import logging
import sys
import tempfile
import time
from pathlib import Path

import attrs
import httpx2
import trio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from messages.chat import HumanMessage
from config.providers import StreamingConfig  # noqa: E402
from providers.clients import ClientPool  # noqa: E402
from providers.errors import ProviderConnectionError, ProviderStatusError  # noqa: E402
from providers.recovery import (  # noqa: E402
    CredentialPool,
    FallbackChain,
    PooledConnector,
    ProviderTarget,
    classify,
    repair_tool_arguments,
    stream_with_recovery,
)
from providers.scripted import serve_scripted_provider  # noqa: E402
from providers.types import ChatRequest  # noqa: E402

CHUNKS = 10_000


def per_call_us(fn, n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - start) / n * 1e6


def bench_classifier() -> None:
    def dropped() -> ProviderConnectionError:
        try:
            raise ProviderConnectionError("connection to provider failed") from httpx2.RemoteProtocolError("peer closed connection")
        except ProviderConnectionError as exc:
            return exc

    errors = [
        ProviderStatusError("HTTP 429", status_code=429, body={"error": {"message": "Rate limit reached", "type": "requests"}}),
        ProviderStatusError("HTTP 400", status_code=400, body={"error": {"message": "maximum context length is 8192 tokens"}}),
        ProviderStatusError("HTTP 402", status_code=402, body={"error": {"message": "Usage limit reached, try again in 5 minutes"}}),
        dropped(),
    ]
    us = per_call_us(lambda: [classify(e, approx_tokens=1000, context_length=8192) for e in errors], 5_000) / len(errors)
    print(f"classify: {us:.1f} us per error (mix of 429, 400 overflow, 402 transient, dropped stream)")


def bench_repair() -> None:
    args = {"path": "/tmp/x.txt", "content": "line\n" * 40, "options": {"mode": "w", "tags": list(range(20))}}
    good = json.dumps(args)
    broken = good[: len(good) - 7]
    print(f"repair_tool_arguments: valid {per_call_us(lambda: repair_tool_arguments(good), 5_000):.1f} us, "
          f"truncated {per_call_us(lambda: repair_tool_arguments(broken), 2_000):.1f} us ({len(good)} chars)")


async def bench_pool() -> None:
    keys = [f"sk-bench-{i:04d}-xxxxxxxxxxxx" for i in range(4)]
    memory = CredentialPool("bench", keys, strategy="round_robin")
    n = 2_000
    start = time.perf_counter()
    for _ in range(n):
        await memory.select()
    in_memory = (time.perf_counter() - start) / n * 1e6
    with tempfile.TemporaryDirectory() as tmp:
        shared = CredentialPool("bench", keys, strategy="round_robin", state_path=Path(tmp) / "bench.json")
        n = 300
        start = time.perf_counter()
        for _ in range(n):
            await shared.select()
        on_disk = (time.perf_counter() - start) / n * 1e6
    print(f"CredentialPool.select: in memory {in_memory:.1f} us, file-backed (flock + re-read + atomic replace, in a thread) {on_disk:.0f} us")


async def bench_loop_overhead() -> None:
    request = ChatRequest(messages=[HumanMessage("hi")], tools=[], model="m")
    step = {"text": "x " * CHUNKS, "chunks": CHUNKS}
    async with serve_scripted_provider() as server:
        pool = ClientPool(StreamingConfig())
        try:
            connector = PooledConnector(pool)
            target = ProviderTarget("bench", "m", server.base_url, "chat_completions")

            async def raw() -> float:
                server.push(step)
                start = time.perf_counter()
                async with connector.adapter(target, None).stream(request) as events:
                    async for _ in events:
                        pass
                return time.perf_counter() - start

            async def recovered() -> float:
                server.push(step)
                start = time.perf_counter()
                await stream_with_recovery(attrs.evolve(request), chain=FallbackChain(target), connector=connector)
                return time.perf_counter() - start

            await raw()  # warm the connection and the imports
            raw_runs, loop_runs = [], []
            for _ in range(4):  # interleaved, so a load spike on a shared machine hits both
                raw_runs.append(await raw())
                loop_runs.append(await recovered())
            raw_s, loop_s = min(raw_runs), min(loop_runs)
        finally:
            await pool.aclose()
    print(f"stream_with_recovery over {CHUNKS} chunks: {loop_s * 1e6 / CHUNKS:.1f} us/chunk vs adapter alone "
          f"{raw_s * 1e6 / CHUNKS:.1f} us/chunk (ratio {loop_s / raw_s:.2f})")


def main() -> None:
    logging.disable(logging.WARNING)  # the repair bench would log one line per call
    bench_classifier()
    bench_repair()
    trio.run(bench_pool)
    trio.run(bench_loop_overhead)


if __name__ == "__main__":
    main()
