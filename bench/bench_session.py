"""Session figures: framework CPU per turn vs the bare SDK, interrupt latency,
memory per idle session, session start time.

Run: .venv/bin/python bench/bench_session.py [--trials 1000]
"""

from __future__ import annotations

import argparse
import functools
import gc
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx2
import openai
import trio
from openai.types.chat import ChatCompletion, ChatCompletionChunk

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from actors.session import SessionActor, SessionOptions, SessionSpec, new_session_id  # noqa: E402
from config.loader import Config  # noqa: E402
from config.session import CompressionConfig  # noqa: E402
from messages.events import ToolStarted, TextDelta, TurnFinished  # noqa: E402
from messages.paths import session_name  # noqa: E402
from messages.session import Interrupt, UserMessage  # noqa: E402
from supervisor import ChildSpec, RestartType
from tests.session.harness import Harness, collect_turn, open_harness  # noqa: E402
from tools.results import ToolResult  # noqa: E402

class ExternalProvider:
    """The scripted provider in its own process, so its CPU is not counted as ours."""

    def __init__(self, process: trio.Process, base_url: str) -> None:
        self.process = process
        self.base_url = base_url
        self._http = httpx2.Client(base_url=base_url.removesuffix("/v1"))

    def push(self, *steps: dict[str, Any]) -> None:
        self._http.post("/_admin/script", json={"steps": list(steps)}).raise_for_status()

    def reset(self) -> None:
        self._http.post("/_admin/reset").raise_for_status()

    @property
    def requests(self) -> list[Any]:
        return [SimpleNamespace(**r) for r in self._http.get("/_admin/requests").json()["requests"]]

    def close(self) -> None:
        self._http.close()


@asynccontextmanager
async def external_provider() -> AsyncIterator[ExternalProvider]:
    process = await trio.lowlevel.open_process(
        [sys.executable, "-m", "providers.scripted", "--port", "0"], stdout=subprocess.PIPE, cwd=str(ROOT)
    )
    assert process.stdout is not None
    line = b""
    while not line.endswith(b"\n"):
        line += await process.stdout.receive_some(1)
    provider = ExternalProvider(process, line.decode().strip())
    try:
        yield provider
    finally:
        provider.close()
        process.terminate()
        with trio.CancelScope(shield=True):
            await process.wait()


NOOP_SCHEMA = {"description": "Does nothing.", "parameters": {"type": "object", "properties": {}}}


def rss_kb() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def register_bench_tools(h: Harness) -> None:
    async def noop(args: dict[str, Any], ctx: Any) -> ToolResult:
        return ToolResult({"ok": True})

    async def wait(args: dict[str, Any], ctx: Any) -> ToolResult:
        await trio.sleep_forever()
        return ToolResult({})

    h.deps.registry.register("noop", "bench", NOOP_SCHEMA, noop, parallel_safe=True)
    h.deps.registry.register("wait", "bench", {**NOOP_SCHEMA, "parameters": {"type": "object", "properties": {"n": {"type": "integer"}}}}, wait, parallel_safe=True)


TOOL_STEP = {"tool_calls": [{"id": "n1", "name": "noop", "arguments": {}}]}
TEXT_STEP = {"text": "done"}


async def turn_overhead(h: Harness, turns: int) -> None:
    """CPU of session turns, then CPU of the very same request bodies sent with the bare SDK."""
    handle, events, _ = await h.start_session(toolsets=("bench",))
    for _ in range(10):  # warm up
        h.provider.push(TOOL_STEP, TEXT_STEP)
        await handle.tell(UserMessage("go"))
        await collect_turn(events)
    first = len(h.provider.requests)
    cpu = wall = 0.0
    for _ in range(turns):
        h.provider.push(TOOL_STEP, TEXT_STEP)
        c0, w0 = time.process_time(), time.perf_counter()
        await handle.tell(UserMessage("go"))
        await collect_turn(events)
        cpu += time.process_time() - c0
        wall += time.perf_counter() - w0
    session_cpu = cpu / turns
    print(f"session turn (2 streamed calls + 1 no-op tool): {session_cpu * 1000:.2f} ms CPU ({wall / turns * 1000:.2f} ms wall), "
          "scripted server in its own process")
    bodies = [r.body for r in h.provider.requests[first:]]
    client = openai.AsyncOpenAI(base_url=h.provider.base_url, api_key="sk-bench", max_retries=0)
    cpu = 0.0
    for index in range(0, len(bodies), 2):
        h.provider.push(TOOL_STEP, TEXT_STEP)
        c0 = time.process_time()
        for body in bodies[index:index + 2]:
            # The same raw POST our adapter makes (no per-call TypedDict transform).
            stream = await client.post("/chat/completions", body=body, cast_to=ChatCompletion, stream=True,
                                       stream_cls=openai.AsyncStream[ChatCompletionChunk])
            async with stream:
                async for _chunk in stream:
                    pass
        cpu += time.process_time() - c0
    await client.close()
    bare_cpu = cpu / turns
    print(f"bare SDK, the same {len(bodies)} request bodies: {bare_cpu * 1000:.2f} ms CPU per turn")
    print(f"framework overhead: {(session_cpu - bare_cpu) * 1000:.2f} ms CPU per turn (target <= 1 ms); "
          f"whole turn {session_cpu * 1000:.2f} ms CPU incl. SDK and HTTP (target <= 8 ms)")


async def interrupt_latency(h: Harness, trials: int) -> None:
    for label, step, ready in (
        ("while the provider streams", {"text": "x " * 400, "chunks": 400, "chunk_delay": 0.05}, TextDelta),
        ("while 8 tool workers run", {"tool_calls": [{"id": f"w{i}", "name": "wait", "arguments": {"n": i}} for i in range(8)]}, ToolStarted),
    ):
        handle, events, _ = await h.start_session(toolsets=("bench",))
        samples = []
        for _ in range(trials):
            h.provider.reset()  # an interrupted trial leaves its unused steps behind
            h.provider.push(step)
            await handle.tell(UserMessage("go"))
            needed = 8 if ready is ToolStarted else 1
            async for event in events:
                if isinstance(event, ready):
                    needed -= 1
                    if needed == 0:
                        break
            t0 = time.perf_counter()
            await handle.tell(Interrupt())
            async for event in events:
                if isinstance(event, TurnFinished):
                    break
            samples.append(time.perf_counter() - t0)
        samples.sort()
        p99 = samples[int(len(samples) * 0.99) - 1]
        print(f"interrupt {label}: median {statistics.median(samples) * 1000:.2f} ms, p99 {p99 * 1000:.2f} ms, "
              f"max {samples[-1] * 1000:.2f} ms over {trials} trials (target p99 <= 20 ms)")


async def idle_sessions(h: Harness, count: int) -> None:
    opts = SessionOptions(cwd=str(h.workdir), model="scripted-model", provider="custom", base_url=h.provider.base_url)
    gc.collect()
    before = rss_kb()
    starts = []
    for _ in range(count):
        sid = new_session_id()
        spec = SessionSpec(h.deps, sid, opts)
        t0 = time.perf_counter()
        await h.system.root.start_child(
            ChildSpec(session_name(sid), functools.partial(SessionActor, spec), RestartType.TEMPORARY)
        )
        starts.append(time.perf_counter() - t0)
    gc.collect()
    after = rss_kb()
    print(f"idle sessions: {(after - before) / count:.1f} KB each over {count} (target <= 100 KB, in-memory store included); "
          f"start median {statistics.median(starts) * 1000:.2f} ms (target <= 2 ms)")


async def main(trials: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        # Compression off: a thousand interrupted trials would otherwise grow one history past the
        # threshold, and the summary call would take the next trial's scripted step.
        config = Config(compression=CompressionConfig(enabled=False))
        async with external_provider() as provider, open_harness(Path(tmp), config, provider=provider) as h:
            register_bench_tools(h)
            await turn_overhead(h, 200)
            await interrupt_latency(h, trials)
            await idle_sessions(h, 1000)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trials", type=int, default=1000)
    trio.run(main, parser.parse_args().trials)
