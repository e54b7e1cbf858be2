"""Benchmark of the HTTP API platform; prints its figures.

    .venv/bin/python bench/bench_api.py [--streams 50 200] [--rounds 3]

Three processes share the machine's cores, as in use: the scripted provider
(``python -m providers.scripted`` with a script of one-call answers), a real
daemon with ``platforms.api_server`` enabled, and this client (the official
``openai`` async SDK under Trio). For each concurrency level N, N streaming
chat completions are started at once, first straight at the provider, then
through the daemon's API (each one an ephemeral session and an agent turn):

- time to first token (request sent -> first content chunk), p50 and p95;
- added latency to first token: API p50 minus direct p50 (the target: <= 50 ms at N=50);
- requests/s: N divided by the wall time until the last stream ended;
- the daemon's CPU time per API request (from ``/proc``), what bounds requests/s.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx2
import openai
import trio

REPO = Path(__file__).resolve().parents[1]
KEY = "bench-key-0123456789abcdef"
ANSWER = "alpha beta gamma delta epsilon zeta"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _start_provider(base: Path, steps: int) -> tuple[subprocess.Popen[str], str]:
    script = base / "script.json"
    script.write_text(json.dumps([{"text": ANSWER, "usage": {"prompt_tokens": 50, "completion_tokens": 6}}] * steps))
    process = subprocess.Popen(
        [sys.executable, "-m", "providers.scripted", "--port", "0", "--script", str(script)],
        cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    assert process.stdout is not None
    return process, process.stdout.readline().strip()


def _start_daemon(base: Path, provider_url: str, port: int, cap: int) -> subprocess.Popen[bytes]:
    home = base / "home"
    home.mkdir(mode=0o700)
    work = base / "work"
    work.mkdir()
    (home / "config.yaml").write_text(
        f"model:\n  default: scripted-model\n  provider: custom\n  base_url: {provider_url}\n  api_mode: chat_completions\n"
        f"daemon:\n  max_running_turns: {cap}\n"
        f"platforms:\n  api_server:\n    enabled: true\n    port: {port}\n    max_concurrent_runs: {cap}\n    cwd: {work}\n"
    )
    env = dict(os.environ, HERMES_ACTORS_HOME=str(home), API_SERVER_KEY=KEY)
    process = subprocess.Popen(
        [sys.executable, "-m", "cli", "daemon"],
        env=env, cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx2.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return process
        except httpx2.HTTPError:
            time.sleep(0.1)
    process.kill()
    raise SystemExit("daemon did not start")


def _stop(daemon: subprocess.Popen[bytes], provider: subprocess.Popen[str]) -> None:
    """Stop the daemon, then the provider."""
    daemon.terminate()
    daemon.wait(30)
    provider.terminate()
    provider.wait(10)
    if provider.stdout is not None:
        provider.stdout.close()


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


async def _one(client: openai.AsyncOpenAI, ttfts: list[float]) -> None:
    sent = time.perf_counter()
    stream = await client.chat.completions.create(
        model="scripted-model", messages=[{"role": "user", "content": "benchmark question"}], stream=True
    )
    first: float | None = None
    text = []
    async for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            if first is None:
                first = time.perf_counter() - sent
            text.append(chunk.choices[0].delta.content)
    assert "".join(text) == ANSWER, text
    assert first is not None
    ttfts.append(first)


async def _round(base_url: str, key: str, n: int) -> tuple[list[float], float]:
    limits = httpx2.Limits(max_connections=n + 10, max_keepalive_connections=n + 10)
    http = httpx2.AsyncClient(limits=limits, timeout=120)
    client = openai.AsyncOpenAI(base_url=base_url, api_key=key, max_retries=0, http_client=http)
    ttfts: list[float] = []
    try:
        await _one(client, [])  # warm the connection pool's first connection
        started = time.perf_counter()
        async with trio.open_nursery() as nursery:
            for _ in range(n):
                nursery.start_soon(_one, client, ttfts)
        wall = time.perf_counter() - started
    finally:
        await client.close()
    return ttfts, wall


async def _measure(provider_url: str, api_url: str, levels: list[int], rounds: int, daemon_pid: int) -> None:
    # Once per daemon, not per completion: its first completion may wait for the provider SDK's load.
    await _round(api_url, KEY, 0)
    for n in levels:
        figures: dict[str, tuple[list[float], list[float]]] = {}
        for label, url, key in (("direct", provider_url, "x"), ("api", api_url, KEY)):
            all_ttft: list[float] = []
            rates: list[float] = []
            cpu_before = _cpu_seconds(daemon_pid)
            for _ in range(rounds):
                ttfts, wall = await _round(url, key, n)
                all_ttft.extend(ttfts)
                rates.append(n / wall)
            figures[label] = (all_ttft, rates)
            cpu = (_cpu_seconds(daemon_pid) - cpu_before) / (rounds * (n + 1))
            print(
                f"N={n:<4} {label:<6} first token p50 {1000 * statistics.median(all_ttft):7.1f} ms"
                f"  p95 {1000 * _percentile(all_ttft, 0.95):7.1f} ms"
                f"  requests/s {statistics.median(rates):7.1f}"
                + (f"  daemon CPU/request {1000 * cpu:5.1f} ms" if label == "api" else ""),
                flush=True,
            )
        added = statistics.median(figures["api"][0]) - statistics.median(figures["direct"][0])
        print(f"N={n:<4} added latency to first token (API p50 - direct p50): {1000 * added:.1f} ms", flush=True)


def main() -> None:
    """Start the provider and the daemon, measure, stop them."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--streams", type=int, nargs="+", default=[50, 200])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    cap = max(args.streams) + 16
    steps = 2 * (sum(args.streams) + len(args.streams)) * args.rounds + 10
    with tempfile.TemporaryDirectory(prefix="ha-bench-") as tmp:
        base = Path(tmp)
        provider, provider_url = _start_provider(base, steps)
        port = _free_port()
        daemon = _start_daemon(base, provider_url, port, cap)
        try:
            print(f"provider {provider_url}, API http://127.0.0.1:{port}/v1, {os.cpu_count()} cores, {args.rounds} rounds")
            trio.run(_measure, provider_url, f"http://127.0.0.1:{port}/v1", args.streams, args.rounds, daemon.pid)
        finally:
            _stop(daemon, provider)
        database = base / "home" / "state.db"
        # Each round's warm-up request included, and the daemon's first.
        requests = (sum(args.streams) + len(args.streams)) * args.rounds + 1
        size = database.stat().st_size
        print(f"state.db after {requests:,} API requests: {size / 1e6:.1f} MB, {size / requests / 1e3:.1f} KB per API session")


if __name__ == "__main__":
    main()
