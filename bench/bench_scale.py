"""Scale figures: many concurrent sessions, a wide subagent batch and
tree snapshots with many live actors, and the jail's cost at scale:
the same concurrent sessions with full access and jailed (workspace-write, one bwrap per command).

The scripted provider runs in its own process in rule mode (each session is
offered only ``terminal``: the model calls it once, then answers), with a
fixed latency before each reply's first byte. Sessions use the real SQLite
store; the figures are this process's, which is the daemon's session code.

Run: .venv/bin/python bench/bench_scale.py [--sessions 1000] [--turns 5] [--idle 10000]
     .venv/bin/python bench/bench_scale.py --jail-only [--jail-sessions 200]   (the jail comparison alone)
"""

from __future__ import annotations

import argparse
import gc
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import trio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from actors.platform.daemon.toolbox import build_toolbox  # noqa: E402
from control.paths import DaemonPaths, ensure_private_dir  # noqa: E402
from actors.session import SessionDeps, SessionOptions, SessionService, SessionsSupervisor  # noqa: E402
from actors.subagent import delegate_capability  # noqa: E402
from config.daemon import DaemonConfig  # noqa: E402
from config.delegation import DelegationConfig  # noqa: E402
from config.loader import Config  # noqa: E402
from config.sandbox import SandboxConfig  # noqa: E402
from config.session import CompressionConfig  # noqa: E402
from messages.events import TurnFinished, TurnStarted  # noqa: E402
from messages.session import Subscribe  # noqa: E402
from messages.paths import session_path  # noqa: E402
from providers.clients import ClientPool  # noqa: E402
from providers.recovery.connector import PooledConnector  # noqa: E402
from store.sqlite.store import SqliteSessionStore  # noqa: E402
from supervisor import ChildSpec, open_actor_system
from tools.jail.launcher import open_launcher  # noqa: E402
from tools.jail.runtime import DaemonJails, RuntimeDir  # noqa: E402
from tools.web import open_web_client  # noqa: E402


def rss_kb() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


@asynccontextmanager
async def scripted(latency: float) -> AsyncIterator[str]:
    process = await trio.lowlevel.open_process(
        [sys.executable, "-m", "providers.scripted", "--port", "0", "--rules", "--latency", str(latency)],
        stdout=subprocess.PIPE, cwd=str(ROOT),
    )
    assert process.stdout is not None
    line = b""
    while not line.endswith(b"\n"):
        line += await process.stdout.receive_some(1)
    try:
        yield line.decode().strip()
    finally:
        process.terminate()
        with trio.CancelScope(shield=True):
            await process.wait()


@asynccontextmanager
async def service(
    tmp: Path, config: Config, jails: DaemonJails | None = None
) -> AsyncIterator[tuple[SessionService, Any]]:
    home = tmp / "home"
    home.mkdir(parents=True, exist_ok=True)
    async with SqliteSessionStore.open(home / "state.db", config.store) as store, open_web_client(config.web) as http:
        clients = ClientPool(config.streaming)
        try:
            toolbox = build_toolbox(config, http, environ={})
            deps = SessionDeps(config=config, home=home, registry=toolbox.registry,
                               connector=PooledConnector(clients, config.streaming, default_key=lambda t: "sk-bench"),
                               store=store, jails=jails)
            async with open_actor_system() as system:
                await system.root.start_child(
                    ChildSpec("sessions", lambda: SessionsSupervisor(config.daemon.hibernate_after_seconds))
                )
                yield SessionService(deps, system.registry, config.daemon,
                                     delegate_factory=lambda setup: delegate_capability(setup, config.delegation)), system
        finally:
            with trio.CancelScope(shield=True):
                await clients.aclose()


async def drive_all(svc: SessionService, ids: list[str], turns: int) -> int:
    """Run ``turns`` turns in every session at once; the turns completed."""
    done = 0

    async def drive(session_id: str) -> None:
        nonlocal done
        handle = await svc.get(session_id)
        subscription = await handle.ask(Subscribe("bench"))
        for turn in range(turns):
            await svc.send(session_id, f"turn {turn}: check the machine")
            async for event in subscription:
                if isinstance(event, TurnFinished) and event.session_id == session_id:
                    assert event.reason == "completed", event
                    done += 1
                    break
        subscription.close()

    async with trio.open_nursery() as nursery:
        for session_id in ids:
            nursery.start_soon(drive, session_id)
    return done


async def jail_comparison(url: str, tmp: Path, count: int, turns: int, rounds: int = 2) -> None:
    """The same concurrent sessions with full access and jailed, alternating, through one launcher."""
    rates: dict[str, list[float]] = {"full-access": [], "workspace-write": []}
    costs: dict[str, list[tuple[float, float]]] = {mode: [] for mode in rates}
    async with open_launcher(SandboxConfig()) as launcher:
        assert launcher.status.available, f"no jail can run here: {launcher.status}"
        for index in range(rounds):
            for mode in rates:
                sandbox = SandboxConfig(mode=mode)
                config = Config(compression=CompressionConfig(enabled=False), daemon=DaemonConfig(max_running_turns=count),
                                sandbox=sandbox)
                base = tmp / f"jail-{mode}-{index}"
                paths = DaemonPaths(base / "home")
                ensure_private_dir(paths.run_dir)
                runtime = RuntimeDir.claim(paths.home, paths.user_dir_record)
                runtime.prepare()
                runtime.hold_in_memory(sandbox.limits.tmp_mb)  # as the daemon does, where it may mount
                jails = DaemonJails(config=sandbox, runtime=runtime, home=str(base / "home"), launcher=launcher)
                async with service(base, config, jails) as (svc, _):
                    options = SessionOptions(cwd=str(tmp), model="scripted", provider="custom", base_url=url,
                                             toolsets=("terminal",))
                    ids = [await svc.create_session(options) for _ in range(count)]
                    start, cpu, children = time.perf_counter(), time.process_time(), _children_cpu()
                    done = await drive_all(svc, ids, turns)
                    rates[mode].append(done / (time.perf_counter() - start))
                    costs[mode].append(((time.process_time() - cpu) / done * 1000, (_children_cpu() - children) / done * 1000))
                runtime.remove()
    full, jailed = (statistics.mean(rates[m]) for m in ("full-access", "workspace-write"))
    print(f"jail at scale: {count} sessions x {turns} turns (one terminal call each, uname -a; 50 ms provider latency), "
          f"{rounds} alternating rounds: full-access {full:.0f} turns/s {[round(r) for r in rates['full-access']]}, "
          f"jailed (workspace-write, bwrap {launcher.status.version}) {jailed:.0f} turns/s "
          f"{[round(r) for r in rates['workspace-write']]}; jailed/full-access = {jailed / full:.3f} (target >= 0.90)")
    for mode, pairs in costs.items():
        print(f"  {mode}: CPU per turn {statistics.mean(p[0] for p in pairs):.1f} ms in the daemon's process, "
              f"{statistics.mean(p[1] for p in pairs):.1f} ms in its children (the commands, and bwrap when jailed)")


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


async def concurrent_sessions(url: str, tmp: Path, count: int, turns: int) -> None:
    config = Config(compression=CompressionConfig(enabled=False), daemon=DaemonConfig(max_running_turns=count))
    async with service(tmp, config) as (svc, system):
        options = SessionOptions(cwd=str(tmp), model="scripted", provider="custom", base_url=url, toolsets=("terminal",))
        gc.collect()
        before = rss_kb()
        ids = [await svc.create_session(options) for _ in range(count)]
        snapshots: list[tuple[float, int]] = []

        async def watch_tree() -> None:
            while True:
                await trio.sleep(0.25)
                t0 = time.perf_counter()
                size = len(system.tree().walk())
                snapshots.append((time.perf_counter() - t0, size))

        start = time.perf_counter()
        cpu0 = time.process_time()
        async with trio.open_nursery() as watcher:
            watcher.start_soon(watch_tree)
            done = await drive_all(svc, ids, turns)
            watcher.cancel_scope.cancel()
        elapsed = time.perf_counter() - start
        cpu = time.process_time() - cpu0
        gc.collect()
        after = rss_kb()
        print(f"{count} sessions x {turns} turns (one terminal call each, 50 ms provider latency): {elapsed:.1f} s, "
              f"{done / elapsed:.0f} turns/s, {cpu / done * 1000:.1f} ms CPU per turn, "
              f"RSS {(after - before) / count:.0f} KB per session")
        worst = max(snapshots, default=(0.0, 0))
        print(f"tree snapshot during the run: largest {worst[1]} live actors in {worst[0] * 1000:.1f} ms "
              f"(median {statistics.median(t for t, _ in snapshots) * 1000:.1f} ms over {len(snapshots)} snapshots)")


async def idle_sessions(url: str, tmp: Path, count: int) -> None:
    config = Config(compression=CompressionConfig(enabled=False), daemon=DaemonConfig(hibernate_after_seconds=1.0))
    async with service(tmp / "idle", config) as (svc, system):
        options = SessionOptions(cwd=str(tmp), model="scripted", provider="custom", base_url=url)
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        start = time.perf_counter()
        for _ in range(count):
            await svc.create_session(options)
        created = time.perf_counter() - start
        gc.collect()
        live = tracemalloc.get_traced_memory()[0]
        while system.lookup("sessions").statistics().details["children"] > 0:
            await trio.sleep(0.5)
        gc.collect()
        hibernated = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        print(f"{count} idle sessions (SQLite store): created in {created:.1f} s ({created / count * 1000:.2f} ms each, "
              f"traced); Python heap {(live - before) / count / 1024:.1f} KB per live idle session, "
              f"{(hibernated - before) / count / 1024:.2f} KB per session once all hibernated")


async def subagent_batch(url: str, tmp: Path, children: int) -> None:
    config = Config(compression=CompressionConfig(enabled=False),
                    delegation=DelegationConfig(max_concurrent_children=children))
    async with service(tmp / "sub", config) as (svc, system):
        options = SessionOptions(cwd=str(tmp), model="scripted", provider="custom", base_url=url,
                                 toolsets=("terminal", "delegation"))
        session_id = await svc.create_session(options)
        handle = await svc.get(session_id)
        subscription = await handle.ask(Subscribe("bench"))
        tasks = [{"goal": f"count files, part {i}"} for i in range(children)]
        # The parent delegates the batch through the real tool path: call delegate_task directly on a call context
        # whose job is the session itself.
        from actors.session.context import CallContext, CallProgress

        session = system.registry._actors[session_path(session_id)]  # the live actor, for its services
        gc.collect()
        before = rss_kb()
        peak: list[int] = []
        tree_times: list[float] = []

        async def watch() -> None:
            while True:
                await trio.sleep(0.05)
                t0 = time.perf_counter()
                tree = system.tree()
                tree_times.append((time.perf_counter() - t0, len(tree.walk())))
                peak.append(rss_kb())

        started: list[float] = []

        async def children_started() -> None:
            async for event in subscription:
                if isinstance(event, TurnStarted) and event.session_id != session_id:
                    started.append(time.perf_counter())

        spawned_at = time.perf_counter()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(watch)
            nursery.start_soon(children_started)
            ctx = CallContext(session.services, "bench", session, CallProgress())
            result = await session.services.delegate(ctx, {"tasks": tasks})
            nursery.cancel_scope.cancel()
        elapsed = time.perf_counter() - spawned_at
        results = result.payload["results"]
        assert all(r["status"] == "completed" for r in results), results[:2]
        biggest = max(tree_times, key=lambda x: x[1]) if tree_times else (0.0, 0)
        spawn = (max(started) - spawned_at) / children if started else float("nan")
        print(f"batch of {children} subagents (rule mode, one terminal call each, no latency): all {len(started)} started "
              f"after {spawn * children * 1000:.0f} ms ({spawn * 1000:.2f} ms per child to spawn), whole batch "
              f"{elapsed * 1000:.0f} ms, peak RSS +{(max(peak, default=before) - before) / children:.0f} KB per live child; "
              f"tree snapshot of {biggest[1]} live actors {biggest[0] * 1000:.1f} ms")
        subscription.close()


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp)
        if args.jail_only:
            async with scripted(0.05) as url:
                await jail_comparison(url, path, args.jail_sessions, args.turns)
            return
        async with scripted(0.0) as url:
            await subagent_batch(url, path, 50)
        async with scripted(0.05) as url:
            await concurrent_sessions(url, path, args.sessions, args.turns)
            await jail_comparison(url, path, args.jail_sessions, args.turns)
            if args.idle:
                await idle_sessions(url, path, args.idle)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--idle", type=int, default=10000)
    parser.add_argument("--jail-sessions", type=int, default=200, help="sessions of the jailed vs full-access run")
    parser.add_argument("--jail-only", action="store_true", help="run only the jailed vs full-access comparison")
    trio.run(main, parser.parse_args())
