"""What one HTTP API completion costs the daemon, counted; prints its figures.

    .venv/bin/python bench/api_work.py [--requests 100] [--concurrency 1] [--burst]

The same three processes as ``bench/bench_api.py`` (scripted provider, daemon, this client), but the
daemon runs with counters installed before it starts: a Trio instrument (task steps, tasks spawned,
I/O waits), and wrappers counting hops to worker threads (by caller), store calls, and socket writes.
Sequential streaming completions (``--concurrency 1``) show the fixed work of one request, without the
batching that concurrency brings to the store's writer. The counts are divided by the number of requests.
``--burst`` starts rounds of ``--concurrency`` requests at once (as ``bench_api.py`` does) and prints, for
the first-token latency, the event loop's thread CPU from a request's handler to its first body chunk: the
loop's work a first token waited behind, which other processes on the machine do not inflate.

Run with ``--daemon`` (internal), this script is the daemon: it installs the counters, runs the daemon's
CLI and writes the counts to ``$HERMES_ACTORS_HOME/work-counts.json`` when it exits.
"""

from __future__ import annotations

import argparse
import atexit
import collections
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_api  # noqa: E402

COUNTS_FILE = "work-counts.json"


class _Counter(trio.abc.Instrument):
    """Counts the scheduler's work."""

    def __init__(self, counts: collections.Counter[str]) -> None:
        self.counts = counts

    def task_spawned(self, task: trio.lowlevel.Task) -> None:
        self.counts["tasks spawned"] += 1

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        self.counts["task steps"] += 1

    def before_io_wait(self, timeout: float) -> None:
        self.counts["I/O waits"] += 1


def _install_counters(counts: collections.Counter[str]) -> None:
    """Wrap what is counted (before the daemon imports and starts anything that uses it)."""
    import trio._highlevel_socket as highlevel_socket
    import trio.to_thread

    from store.sqlite.store import SqliteSessionStore

    to_thread = trio.to_thread.run_sync

    async def counted_to_thread(fn: Any, *args: Any, **kwargs: Any) -> Any:
        caller = sys._getframe(1).f_code
        counts[f"thread hop from {Path(caller.co_filename).name}:{caller.co_name}"] += 1
        counts["thread hops"] += 1
        return await to_thread(fn, *args, **kwargs)

    trio.to_thread.run_sync = counted_to_thread
    send_all = highlevel_socket.SocketStream.send_all

    async def counted_send_all(self: Any, data: Any) -> None:
        counts["socket writes"] += 1
        await send_all(self, data)

    highlevel_socket.SocketStream.send_all = counted_send_all  # type: ignore[method-assign]  # the bench counts sends by replacing the method for its run
    for name in ("create_session", "record_session", "append", "save_state", "update_counters", "end_session", "get_session", "load"):
        setattr(SqliteSessionStore, name, _counted_method(counts, name, getattr(SqliteSessionStore, name)))
    run = trio.run

    def run_with_counter(*args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("instruments", []).append(_Counter(counts))
        return run(*args, **kwargs)

    trio.run = run_with_counter


def _install_first_token_clock(loop_cpu: list[float]) -> None:
    """Record, per streamed completion, the event loop's thread CPU from the handler's start to the first
    body chunk: how much of the loop's work a request's first token waited behind (the other requests'
    included), which the machine's load does not inflate as it does the wall time."""
    import time

    from actors.platform.api import sse
    from actors.platform.api.app import _Api

    starts: dict[object, float] = {}
    completions = _Api.completions

    async def timed_completions(self: Any, request: Any) -> Any:
        starts[trio.lowlevel.current_task()] = time.thread_time()
        return await completions(self, request)

    call = sse.SseResponse.__call__

    async def timed_call(self: Any, scope: Any, receive: Any, send: Any) -> None:
        start = starts.pop(trio.lowlevel.current_task(), None)

        async def first_send(message: Any) -> None:
            nonlocal start
            if start is not None and message.get("body"):
                loop_cpu.append(time.thread_time() - start)
                start = None
            await send(message)

        await call(self, scope, receive, first_send)

    _Api.completions = timed_completions  # type: ignore[method-assign]  # the bench times by replacing the methods for its run
    sse.SseResponse.__call__ = timed_call  # type: ignore[method-assign]  # (as above)


def _counted_method(counts: collections.Counter[str], name: str, method: Any) -> Any:
    async def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        counts[f"store.{name}"] += 1
        return await method(self, *args, **kwargs)

    return counted


def _run_daemon() -> None:
    """Be the daemon, counting; the counts are written at exit."""
    # The checkout the daemon was started in (bench_api starts it there), not whatever is installed.
    sys.path.insert(0, os.getcwd())
    counts: collections.Counter[str] = collections.Counter()
    _install_counters(counts)
    loop_cpu: list[float] = []
    _install_first_token_clock(loop_cpu)
    out = Path(os.environ["HERMES_ACTORS_HOME"]) / COUNTS_FILE
    atexit.register(lambda: out.write_text(json.dumps({"counts": counts, "first_token_loop_cpu": loop_cpu})))
    from cli import main

    sys.argv = ["hermes-actors", "daemon"]
    sys.exit(main())


async def _requests(api_url: str, n: int, concurrency: int, daemon_pid: int, burst: bool) -> float:
    """Run ``n`` streaming completions, ``concurrency`` at a time (``burst``: in rounds of ``concurrency``
    started at once, as ``bench_api.py`` does); the daemon's CPU ms per request."""
    if burst:
        before = bench_api._cpu_seconds(daemon_pid)
        for _ in range(n // concurrency):
            await bench_api._round(api_url, bench_api.KEY, concurrency)
        return 1000 * (bench_api._cpu_seconds(daemon_pid) - before) / (n // concurrency * (concurrency + 1))
    limits = bench_api.httpx2.Limits(max_connections=concurrency + 10)
    http = bench_api.httpx2.AsyncClient(limits=limits, timeout=120)
    client = bench_api.openai.AsyncOpenAI(base_url=api_url, api_key=bench_api.KEY, max_retries=0, http_client=http)
    slots = trio.Semaphore(concurrency)

    async def one() -> None:
        async with slots:
            await bench_api._one(client, [])

    try:
        before = bench_api._cpu_seconds(daemon_pid)
        async with trio.open_nursery() as nursery:
            for _ in range(n):
                nursery.start_soon(one)
        return 1000 * (bench_api._cpu_seconds(daemon_pid) - before) / n
    finally:
        await client.close()


def main() -> None:
    """Start the provider and a counting daemon, run the requests, print the counts per request."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--burst", action="store_true", help="start each round of --concurrency requests at once")
    parser.add_argument("--daemon", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.daemon:
        _run_daemon()
        return
    with tempfile.TemporaryDirectory(prefix="ha-bench-") as tmp:
        base = Path(tmp)
        provider, provider_url = bench_api._start_provider(base, 2 * args.requests + 10)
        port = bench_api._free_port()
        popen = subprocess.Popen

        def counting_daemon(command: list[str], **kwargs: Any) -> Any:
            # bench_api starts ``python -m cli daemon``: this script, counting, instead.
            return popen([sys.executable, str(Path(__file__).resolve()), "--daemon"], **kwargs)

        bench_api.subprocess.Popen = counting_daemon  # type: ignore[misc]  # the bench counts the daemons it starts by replacing Popen for its run
        try:
            daemon = bench_api._start_daemon(base, provider_url, port, args.concurrency + 16)
        finally:
            bench_api.subprocess.Popen = popen  # type: ignore[misc]  # puts back the Popen replaced above
        try:
            cpu = trio.run(_requests, f"http://127.0.0.1:{port}/v1", args.requests, args.concurrency, daemon.pid, args.burst)
        finally:
            bench_api._stop(daemon, provider)
        written = json.loads((base / "home" / COUNTS_FILE).read_text())
    counts, loop_cpu = written["counts"], written["first_token_loop_cpu"]
    how = "in bursts of" if args.burst else "at a time"
    print(f"{args.requests} streaming completions, {args.concurrency} {how}; per request:")
    print(f"  daemon CPU {cpu:.2f} ms")
    if loop_cpu:
        print(
            f"  event loop CPU from request to first token: p50 {1000 * statistics.median(loop_cpu):.1f} ms,"
            f" p95 {1000 * bench_api._percentile(loop_cpu, 0.95):.1f} ms"
        )
    # A burst round starts with one request of its own, to open the client's first connection.
    sent = args.requests // args.concurrency * (args.concurrency + 1) if args.burst else args.requests
    for name, value in sorted(counts.items(), key=lambda item: -item[1]):
        if value >= sent // 2:
            print(f"  {value / sent:7.2f}  {name}")


if __name__ == "__main__":
    main()
