"""Runtime figures: actor spawn cost and memory, tell/ask throughput, codec, tree snapshot.

Run: .venv/bin/python bench/bench_runtime.py
"""

from __future__ import annotations

import gc
import resource
import statistics
import time
from typing import Any

import attrs
import trio

from actors.base import Actor
from messages.codec import Codec
from supervisor import ChildSpec, open_actor_system


def rss_kb() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


class Idle(Actor[Any]):
    kind = "idle"


class Holder(Actor[Any]):
    """Spawns N idle children on request."""

    async def handle(self, n: int) -> None:
        for i in range(n):
            await self.spawn(Idle(), f"idle:{i}")


class Sink(Actor[Any]):
    kind = "sink"
    mailbox_capacity = 1024

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    async def main(self) -> None:
        mailbox = self.mailbox
        while True:
            await mailbox.get()
            self.count += 1
            while mailbox.get_nowait() is not None:
                self.count += 1


class Echo(Actor[Any]):
    kind = "echo"

    async def handle(self, message: Any) -> Any:
        return message


@attrs.frozen
class Small:
    id: int
    tool: str
    args: dict[str, Any]


async def spawn_bench(n: int) -> None:
    async with open_actor_system() as system:
        holder = await system.root.start_child(ChildSpec("holder", Holder))
        gc.collect()
        before = rss_kb()
        start = time.perf_counter()
        await holder.ask(n)
        elapsed = time.perf_counter() - start
        gc.collect()
        after = rss_kb()
        print(f"spawn {n} idle actors: {elapsed * 1000:.0f} ms ({elapsed / n * 1e6:.1f} us each), "
              f"RSS {(after - before) * 1024 / n / 1024:.2f} KB per actor (target <= 8 KB)")
        start = time.perf_counter()
        tree = system.tree()
        elapsed = time.perf_counter() - start
        print(f"tree snapshot of {len(tree.walk())} actors: {elapsed * 1000:.1f} ms (target <= 50 ms)")


async def tell_bench(n: int) -> None:
    async with open_actor_system() as system:
        sink_actor = Sink()
        sink = await system.root.start_child(ChildSpec("sink", lambda: sink_actor))
        start = time.perf_counter()
        for i in range(n):
            await sink.tell(i)
        while sink_actor.count < n:
            await trio.sleep(0)
        elapsed = time.perf_counter() - start
        print(f"await tell: {n / elapsed:,.0f} messages/s (target >= 100,000)")
        sink_actor.count = 0
        start = time.perf_counter()
        sent = 0
        while sent < n:
            try:
                sink.tell_nowait(sent)
                sent += 1
            except Exception:
                await trio.sleep(0)
        while sink_actor.count < n:
            await trio.sleep(0)
        elapsed = time.perf_counter() - start
        print(f"tell_nowait, receiver draining in batches: {n / elapsed:,.0f} messages/s (target >= 500,000)")
        echo = await system.root.start_child(ChildSpec("echo", Echo))
        samples = []
        for i in range(20_000):
            t0 = time.perf_counter()
            await echo.ask(i)
            samples.append(time.perf_counter() - t0)
        print(f"ask round trip: median {statistics.median(samples) * 1e6:.1f} us, "
              f"p99 {statistics.quantiles(samples, n=100)[98] * 1e6:.1f} us (target median <= 30 us)")


def codec_bench(n: int) -> None:
    codec = Codec(Small)
    message = Small(7, "read_file", {"path": "notes.txt", "limit": 50})
    start = time.perf_counter()
    for _ in range(n):
        codec.decode(codec.encode(message))
    elapsed = time.perf_counter() - start
    print(f"codec encode+decode of a small message: {n / elapsed:,.0f}/s (target >= 100,000)")


def main() -> None:
    trio.run(spawn_bench, 10_000)
    trio.run(tell_bench, 200_000)
    codec_bench(100_000)


if __name__ == "__main__":
    main()
