"""Benchmarks of execute_code: RPC round trip, per-call cost of each kind of call, sequential and threaded
calls, start-up to first RPC.

Run: .venv/bin/python bench/bench_sandbox.py   (not pinned; ``taskset -c 0`` in front pins it)
"""

from __future__ import annotations

import json
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import trio

from actors import Actor
from actors.sandbox import Sandbox, SandboxJob
from supervisor import ChildSpec, RestartType, open_actor_system
from config.sandbox import CodeExecutionConfig
from tools.context import ToolContext
from tools.dispatch import dispatch
from tools.parallel import ToolConcurrencyGate
from tools.registry import ToolRegistry
from tools.results import ToolReply, ToolResult
from tools.builtin import register_core_tools
from tools.testing import LocalToolContext

sys.path.insert(0, str(Path(__file__).resolve().parent / "vs_hermes"))
from code_calls import CALLS, prepare, script  # noqa: E402  (bench/vs_hermes: the same calls beside Hermes)

CONFIG = CodeExecutionConfig(max_tool_calls=100_000, progress_interval_seconds=3600)
IO_WAIT_SECONDS = 0.005


async def _noop(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    return ToolResult({})


async def _io_wait(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    await trio.sleep(IO_WAIT_SECONDS)
    return ToolResult({"ok": True})


def _registry() -> ToolRegistry:
    registry = ToolRegistry()
    schema = {"description": "bench", "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}
    registry.register("read_file", "file", schema, _noop, parallel_safe=True)
    registry.register("web_extract", "web", schema, _io_wait, parallel_safe=True)
    return registry


async def _run(code: str, base_dir: str, on_call: Any = None) -> tuple[str, float]:
    registry = _registry()
    ctx = LocalToolContext(home=Path(base_dir))
    gate = ToolConcurrencyGate(registry)

    async def call_tool(name: str, args: dict[str, Any]) -> ToolReply:
        if on_call is not None:
            on_call()
        return await dispatch(registry, name, args, ctx)

    sandbox = Sandbox(code, call_tool=call_tool, allowed_tools=frozenset(registry.names()), config=CONFIG,
                      gate=gate, base_dir=base_dir, jail=ctx.jail)  # fmt: skip
    start = time.perf_counter()
    result = await sandbox.run()
    elapsed = time.perf_counter() - start
    if result.exit_code != 0:
        raise SystemExit(f"bench script failed: {result.output}")
    return result.output, elapsed


ROUND_TRIP = """
import time, json
from hermes_tools import read_file
for _ in range(200):
    read_file("x")
samples = []
for _ in range(3000):
    t = time.perf_counter_ns()
    read_file("x")
    samples.append(time.perf_counter_ns() - t)
samples.sort()
print(json.dumps({"median": samples[len(samples) // 2], "p90": samples[int(len(samples) * 0.9)]}))
"""

REFUSED = """
import time
import hermes_tools
for _ in range(500):
    hermes_tools._call("delegate_task", {"goal": "x"})
t, cpu = time.perf_counter(), time.process_time()
for _ in range(5000):
    hermes_tools._call("delegate_task", {"goal": "x"})
print((time.perf_counter() - t) / 5000, (time.process_time() - cpu) / 5000)
"""

SEQUENTIAL = """
import time
from hermes_tools import read_file
t, cpu = time.perf_counter(), time.process_time()
for _ in range(1000):
    read_file("x")
print(time.perf_counter() - t, time.process_time() - cpu)
"""

THREADED = """
import time
from concurrent.futures import ThreadPoolExecutor
from hermes_tools import web_extract
def worker(_):
    for _ in range(100):
        web_extract(["u"])
for threads in (1, 16):
    t = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(worker, range(threads)))
    print(threads, time.perf_counter() - t)
"""

class _Worker(Actor[Any]):
    """Stands in for the session's tool worker: runs the sandbox as its job and keeps the output."""

    kind = "tool"

    def __init__(self, sandbox: SandboxJob) -> None:
        super().__init__()
        self.sandbox = sandbox
        self.output = ""

    async def main(self) -> None:
        self.output = (await self.run_job(self.sandbox, "sandbox")).output


async def _run_in_tree(code: str, base_dir: str, registry: ToolRegistry | None = None, cwd: Path | None = None) -> str:
    registry = registry if registry is not None else _registry()
    ctx = LocalToolContext(home=Path(base_dir), cwd=cwd if cwd is not None else ".")

    async def call_tool(name: str, args: dict[str, Any]) -> ToolReply:
        return await dispatch(registry, name, args, ctx)

    sandbox = SandboxJob(code, call_tool=call_tool, allowed_tools=frozenset(registry.names()), config=CONFIG,
                         gate=ToolConcurrencyGate(registry), base_dir=base_dir, jail=ctx.jail)  # fmt: skip
    async with open_actor_system() as system:
        worker = _Worker(sandbox)
        handle = await system.root.start_child(ChildSpec("tool:bench", lambda: worker, restart=RestartType.TEMPORARY))
        await handle.wait_stopped()
    return worker.output


async def _canned_round_trip(base_dir: str) -> float:
    """The same round-trip script against a bare Trio loop that answers every request with a canned
    response: the floor set by the stub, the two processes and Trio on this machine right now."""
    import os
    import socket

    from actors.sandbox.stubs import SANDBOX_ALLOWED_TOOLS, generate_stub_module

    directory = tempfile.mkdtemp(dir=base_dir)
    with open(os.path.join(directory, "hermes_tools.py"), "w") as file:
        file.write(generate_stub_module(SANDBOX_ALLOWED_TOOLS))
    path = os.path.join(directory, "s")
    listener = trio.socket.socket(socket.AF_UNIX)
    await listener.bind(path)
    listener.listen(1)
    env = {"PYTHONPATH": directory, "HERMES_RPC_SOCKET": path, "HERMES_RPC_TOKEN": "t"}
    done: list[Any] = []

    async def child() -> None:
        done.append(await trio.run_process([sys.executable, "-c", ROUND_TRIP], env=env, capture_stdout=True))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(child)
        conn, _ = await listener.accept()
        stream = trio.SocketStream(conn)
        pending = b""
        while data := await stream.receive_some(65536):
            pending += data
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                if line == b"t":  # the token line that opens the connection
                    continue
                request_id = json.loads(line)["id"]
                await stream.send_all(b'{"type":"RpcResponse","id":%d,"result":"{}","error":null}\n' % request_id)
        await stream.aclose()
    listener.close()
    return json.loads(done[0].stdout)["median"] / 1000


def _cpu_seconds() -> float:
    """CPU time of this process, every thread included."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def _per_call_figures(base_dir: str) -> None:
    """Per call of each kind bench/vs_hermes times, with the real file tools, each call a ``rpc/call:<n>``
    job (dispatch only: no session, so no guardrails, approvals or events): the script's wall-clock time,
    and the daemon's CPU time (a run of ``count`` calls less a run of one), which a busy machine moves less."""
    registry = ToolRegistry()
    register_core_tools(registry)
    work = Path(tempfile.mkdtemp(dir=base_dir))
    paths = prepare(work)
    for kind in CALLS:
        count = {"refused": 5000, "search": 200}.get(kind, 1000)
        walls, cpus = [], []
        for _ in range(3):
            runs = []
            for calls in (1, count):
                cpu = _cpu_seconds()
                # Each run has a context of its own, so its read windows are all new to it.
                output = await _run_in_tree(script(kind, str(paths[kind]), calls), base_dir, registry, cwd=work)
                runs.append(_cpu_seconds() - cpu)
            walls.append(float(output.split("PERCALL_US")[1].split()[0]))
            cpus.append((runs[1] - runs[0]) / (count - 1) * 1e6)
        print(f"per call, {kind}: wall {statistics.median(walls):.1f} us, daemon CPU {statistics.median(cpus):.1f} us "
              f"(medians of 3 scripts of {count:,} calls)")


FIRST_RPC = "from hermes_tools import read_file\nread_file('x')\n"


async def main() -> None:
    base_dir = tempfile.mkdtemp(prefix="hx-b-", dir="/tmp")
    try:
        await _figures(base_dir)
    finally:
        shutil.rmtree(base_dir, ignore_errors=True)


async def _figures(base_dir: str) -> None:

    output, _ = await _run(ROUND_TRIP, base_dir)
    figures = json.loads(output)
    print(f"no-op RPC round trip from the script: median {figures['median'] / 1000:.1f} us, "
          f"p90 {figures['p90'] / 1000:.1f} us (target median <= 75 us)")  # fmt: skip

    print(f"reference, the same script against a bare Trio loop with canned answers: median "
          f"{await _canned_round_trip(base_dir):.1f} us")  # fmt: skip

    figures = json.loads(await _run_in_tree(ROUND_TRIP, base_dir))
    print(f"same, each call an rpc:<n> actor under .../tool:<id>/sandbox: median {figures['median'] / 1000:.1f} us, "
          f"p90 {figures['p90'] / 1000:.1f} us")  # fmt: skip

    await _per_call_figures(base_dir)

    runs = [[float(x) * 1e6 for x in (await _run(REFUSED, base_dir))[0].split()] for _ in range(5)]
    wall, script_cpu = statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)
    print(f"a refused call from the script (5,000 in a row, median of 5 runs): {wall:.1f} us, "
          f"script CPU {script_cpu:.1f} us per call")  # fmt: skip

    cpu = time.process_time()
    output, _ = await _run(SEQUENTIAL, base_dir)
    cpu = time.process_time() - cpu
    seconds, child_cpu = (float(x) for x in output.split())
    print(f"1,000 sequential no-op calls: {seconds * 1000:.1f} ms ({1000 / seconds:,.0f} calls/s); CPU per call: "
          f"daemon {cpu * 1000:.0f} us (incl. start/stop), script {child_cpu * 1000:.0f} us")  # fmt: skip

    output, _ = await _run(THREADED, base_dir)
    (_, one), (_, sixteen) = (line.split() for line in output.splitlines())
    one_rate, sixteen_rate = 100 / float(one), 1600 / float(sixteen)
    print(f"I/O-waiting parallel-safe tool ({IO_WAIT_SECONDS * 1000:.0f} ms each): 1 thread x 100 calls "
          f"{one_rate:,.0f} calls/s; 16 threads x 100 calls {sixteen_rate:,.0f} calls/s "
          f"({sixteen_rate / one_rate:.1f}x, gate limit 8)")  # fmt: skip

    starts = []
    for _ in range(15):
        first: list[float] = []
        t0 = time.perf_counter()
        await _run(FIRST_RPC, base_dir, on_call=lambda: first.append(time.perf_counter()) if not first else None)
        starts.append(first[0] - t0)
    print(f"sandbox start -> first RPC served: median {statistics.median(starts) * 1000:.1f} ms, "
          f"min {min(starts) * 1000:.1f} ms over {len(starts)} runs (target <= 40 ms)")  # fmt: skip

    for flags in ([], ["-S"]):
        bare = []
        for _ in range(10):
            t0 = time.perf_counter()
            await trio.run_process([sys.executable, *flags, "-c", "pass"])
            bare.append(time.perf_counter() - t0)
        label = " ".join(["python", *flags, "-c pass"])
        print(f"reference, bare interpreter start ({label}): median {statistics.median(bare) * 1000:.1f} ms")

if __name__ == "__main__":
    trio.run(main)
