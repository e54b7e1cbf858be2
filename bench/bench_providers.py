"""Provider adapter benchmarks (prints its figures; not a test).

1. Adapter overhead per streamed chunk: the same 10,000-chunk response is read
   once by iterating the raw SDK stream of a stock client and once through our
   adapter (pooled client, stale guard, conversion, events), for each wire
   protocol. The scripted server runs in its own process, so the client
   process's CPU time is what the client side costs; the ratio adapter/raw is
   the overhead (target <= 1.3).
2. Cancel to connection closed: a stream is cancelled mid-way and the
   in-process scripted server notes when it sees the disconnect (target <= 5 ms).

Run: .venv/bin/python bench/bench_providers.py [--chunks N] [--rounds R]
"""

from __future__ import annotations

import argparse
import ssl
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import openai
import trio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from messages.chat import HumanMessage
from config.providers import StreamingConfig  # noqa: E402
from messages.events import TextDelta  # noqa: E402
from providers import ChatRequest, ClientPool, ProviderSettings, make_adapter  # noqa: E402
from providers.scripted import serve_scripted_provider  # noqa: E402

MODES = ("chat_completions", "anthropic_messages", "codex_responses")


def _settings(base_url: str, mode: str) -> ProviderSettings:
    return ProviderSettings(provider="bench", model="bench-model", base_url=base_url, api_mode=mode, api_key="k")


def _request() -> ChatRequest:
    return ChatRequest(messages=[HumanMessage("go")], tools=[], model="bench-model")


def _plain_client(settings: ProviderSettings, context: ssl.SSLContext) -> Any:
    """A stock SDK client (no pool, no stale guard): the baseline."""
    http = httpx2.AsyncClient(verify=context)
    if settings.api_mode == "anthropic_messages":
        base = (settings.base_url or "").removesuffix("/v1")
        return anthropic.AsyncAnthropic(api_key="k", base_url=base, max_retries=0, http_client=http)
    return openai.AsyncOpenAI(api_key="k", base_url=settings.base_url, max_retries=0, http_client=http)


async def _raw_stream(client: Any, settings: ProviderSettings) -> int:
    """Iterate the SDK stream directly, the way a bare caller would."""
    messages = [{"role": "user", "content": "go"}]
    if settings.api_mode == "anthropic_messages":
        stream = await client.messages.create(model="bench-model", max_tokens=1024, messages=messages, stream=True)
    elif settings.api_mode == "codex_responses":
        stream = await client.responses.create(model="bench-model", input=messages, stream=True)
    else:
        stream = await client.chat.completions.create(
            model="bench-model", messages=messages, stream=True, stream_options={"include_usage": True}
        )
    count = 0
    async with stream:
        async for _ in stream:
            count += 1
    return count


async def _adapter_stream(pool: ClientPool, settings: ProviderSettings) -> int:
    adapter = make_adapter(settings, pool, StreamingConfig())
    count = 0
    async with adapter.stream(_request()) as events:
        async for _ in events:
            count += 1
    return count


async def _cpu_time(run: Callable[[], Awaitable[int]]) -> tuple[float, float, int]:
    cpu, wall = time.process_time(), time.perf_counter()
    n = await run()
    return time.process_time() - cpu, time.perf_counter() - wall, n


async def bench_overhead(chunks: int, rounds: int) -> None:
    """Print client CPU per chunk, raw SDK vs adapter, per wire protocol."""
    proc = await trio.lowlevel.open_process(
        [sys.executable, "-m", "providers.scripted", "--port", "0"],
        stdout=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        cwd=str(Path(__file__).resolve().parents[1]),
    )
    try:
        line = b""
        while not line.endswith(b"\n"):
            line += await proc.stdout.receive_some(1)
        base_url = line.decode().strip()
        admin = base_url.removesuffix("/v1") + "/_admin/script"
        step = {"text": "x" * chunks, "chunks": chunks}
        context = await trio.to_thread.run_sync(httpx2.create_ssl_context)
        pool = ClientPool(StreamingConfig(), context)
        print(f"adapter overhead, {chunks} chunks, median of {rounds} rounds (client CPU time; target ratio <= 1.3):")
        async with httpx2.AsyncClient() as http:
            for mode in MODES:
                settings = _settings(base_url, mode)
                plain = _plain_client(settings, context)
                raw_cpu: list[float] = []
                ours_cpu: list[float] = []
                await http.post(admin, json=[step])
                await _raw_stream(plain, settings)  # warm-up: imports, connection
                for _ in range(rounds):
                    await http.post(admin, json=[step, step])
                    cpu, _, n_raw = await _cpu_time(lambda: _raw_stream(plain, settings))
                    raw_cpu.append(cpu)
                    cpu, _, n_ours = await _cpu_time(lambda: _adapter_stream(pool, settings))
                    ours_cpu.append(cpu)
                raw = statistics.median(raw_cpu)
                ours = statistics.median(ours_cpu)
                print(
                    f"  {mode:20s} raw {raw / n_raw * 1e6:6.1f} us/chunk  adapter {ours / n_raw * 1e6:6.1f} us/chunk"
                    f"  ratio {ours / raw:4.2f}  ({n_raw} SDK chunks, {n_ours} events)"
                )
                await plain.close()
        await pool.aclose()
    finally:
        proc.terminate()
        await proc.wait()
        await proc.stdout.aclose()


async def bench_cancel(samples: int) -> None:
    """Print cancel -> server-seen disconnect latencies per wire protocol."""
    pool = await ClientPool.create(StreamingConfig())
    async with serve_scripted_provider() as server:
        print(f"cancel -> connection closed as seen by the server, {samples} samples per mode (target <= 5 ms):")
        for mode in MODES:
            adapter = make_adapter(_settings(server.base_url, mode), pool, StreamingConfig())
            latencies = []
            for _ in range(samples):
                server.push({"text": "a b c d e f g h i j", "stall_after_chunks": 6})
                seen = len(server.disconnects)
                with trio.CancelScope() as scope:
                    async with adapter.stream(_request()) as events:
                        async for event in events:
                            if isinstance(event, TextDelta):
                                cancelled_at = trio.current_time()
                                scope.cancel()
                disconnects = await server.wait_disconnects(seen + 1)
                latencies.append(disconnects[-1].at - cancelled_at)
            latencies.sort()
            p95 = latencies[int(len(latencies) * 0.95) - 1]
            print(
                f"  {mode:20s} median {statistics.median(latencies) * 1e3:5.2f} ms  p95 {p95 * 1e3:5.2f} ms"
                f"  max {latencies[-1] * 1e3:5.2f} ms"
            )
    await pool.aclose()


async def main(chunks: int, rounds: int, samples: int) -> None:
    """Run both benchmarks."""
    await bench_overhead(chunks, rounds)
    await bench_cancel(samples)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--samples", type=int, default=50)
    args = parser.parse_args()
    trio.run(main, args.chunks, args.rounds, args.samples)
