"""Benchmarks of the MCP client; prints its figures.

    .venv/bin/python bench/bench_mcp.py [--calls 2000] [--starts 5]

- Tool call round trip over stdio and over streamable HTTP (loopback), against the test suite's toy server
  (the SDK's own server side, in its own process): through the daemon's tool path (``dispatch``: lookup,
  argument check, the MCP client, result conversion, redaction, cap) and, alternating with it on the same
  connection, the bare SDK call (``ClientSession.call_tool``: the server's time plus the SDK's). The
  daemon's overhead is the difference of the medians.
- Daemon start with 5 configured MCP servers, one of them unreachable, in process (``serve_daemon``, the
  interpreter and imports already warm): the time until it serves, beside the same start with no MCP
  server; then when the unreachable one is ``failed`` and when the four others are ``ready``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import trio  # noqa: E402

from supervisor import open_actor_system
from config.mcp import McpServerConfig  # noqa: E402
from tests.mcp.helpers import TOY, http_server, running_mcp, tag, wait_state  # noqa: E402
from tools.dispatch import dispatch  # noqa: E402
from tools.testing import LocalToolContext  # noqa: E402


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def _ms(values: list[float]) -> str:
    return f"median {statistics.median(values) * 1000:.3f} ms, p99 {_percentile(values, 0.99) * 1000:.3f} ms"


async def _round_trips(entry: McpServerConfig, calls: int, home: Path) -> tuple[list[float], list[float]]:
    """(through dispatch, bare SDK) round trips of ``echo``, alternated on one connection."""
    async with open_actor_system() as system:
        async with running_mcp(system, {entry.name: entry}) as registry:
            await wait_state(system, entry.name, "ready")
            # The bench reads the live connection the way a tool call does (the actor's client).
            actor = system.lookup(f"mcp/server:{entry.name}")._actor  # type: ignore[attr-defined]  # a handle hides its actor; the bench reads the actor's live client on purpose
            session = actor.client.link.session
            ctx = LocalToolContext(home=home)
            name = f"mcp_{entry.name}_echo"
            ours: list[float] = []
            bare: list[float] = []
            for _ in range(50):  # warm-up: first calls compile validators, fill caches
                await dispatch(registry, name, {"text": "ping"}, ctx)
            for _ in range(calls):
                started = time.perf_counter()
                reply = await dispatch(registry, name, {"text": "ping"}, ctx)
                ours.append(time.perf_counter() - started)
                assert reply.ok, reply.text
                started = time.perf_counter()
                await session.call_tool("echo", {"text": "ping"})
                bare.append(time.perf_counter() - started)
    return ours, bare


def _stop_through_socket(paths: Any) -> None:
    from control.client import ControlClient
    from messages import control as c

    with ControlClient.connect(paths) as client:
        client.request(c.StopDaemon(client.next_id()))


def _config_text(marker: str, servers: int) -> str:
    lines = ["mcp_servers:"]
    for n in range(servers - 1):
        lines.append(f"  toy{n}: {{command: {sys.executable}, args: [{TOY}, stdio, '{marker}'], connect_timeout: 30}}")
    if servers:
        # Nothing listens on the discard port: a refused connection, as for a server that is down.
        lines.append("  down: {url: 'http://127.0.0.1:9/mcp', connect_timeout: 5}")
    return "\n".join(lines) + "\n"


async def _daemon_start(servers: int) -> dict[str, Any]:
    """Serve a daemon in process with ``servers`` MCP servers (the last unreachable); its timings."""
    from actors.platform.daemon import serve_daemon
    from control.paths import DaemonPaths
    from config.loader import load_config

    marker = tag()
    with tempfile.TemporaryDirectory(prefix="ha-") as base:
        home = Path(base) / "home"
        home.mkdir(mode=0o700)
        (home / "config.yaml").write_text(_config_text(marker, servers), encoding="utf-8")
        paths = DaemonPaths(home)
        config = load_config(home, log_warnings=False)
        found: dict[str, Any] = {}
        async with trio.open_nursery() as nursery:
            started = trio.current_time()
            system = await nursery.start(lambda task_status: serve_daemon(paths, config, task_status=task_status))
            found["ready"] = trio.current_time() - started
            if servers:
                await wait_state(system, "down", "failed", timeout=30)
                found["down_failed"] = trio.current_time() - started
                found["down_error"] = system.lookup("mcp/server:down").statistics().details["error"]
                for n in range(servers - 1):
                    await wait_state(system, f"toy{n}", "ready", timeout=60)
                found["all_ready"] = trio.current_time() - started
            # What `hermes-actors stop` does, without a client: the daemon's own stop request.
            await trio.to_thread.run_sync(_stop_through_socket, paths)
        return found


async def _main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="ha-bench-") as home:
        marker = tag()
        stdio_entry = McpServerConfig(name="toy", command=sys.executable, args=(TOY, "stdio", marker), connect_timeout=30)
        ours, bare = await _round_trips(stdio_entry, args.calls, Path(home))
        print(f"stdio round trip: through dispatch {_ms(ours)}; bare SDK {_ms(bare)}; "
              f"daemon overhead {1000 * (statistics.median(ours) - statistics.median(bare)):.3f} ms (median)")
        async with http_server(marker) as url:
            http_entry = McpServerConfig(name="web", url=url, connect_timeout=30)
            ours, bare = await _round_trips(http_entry, args.calls, Path(home))
        print(f"http round trip: through dispatch {_ms(ours)}; bare SDK {_ms(bare)}; "
              f"daemon overhead {1000 * (statistics.median(ours) - statistics.median(bare)):.3f} ms (median)")
    await _daemon_start(0)  # warm-up: the tree's imports
    without, with_five = [], []
    for _ in range(args.starts):
        without.append((await _daemon_start(0))["ready"])
        found = await _daemon_start(5)
        with_five.append(found["ready"])
    print(f"daemon start, no MCP server: median {statistics.median(without) * 1000:.1f} ms "
          f"(min {min(without) * 1000:.1f}, max {max(without) * 1000:.1f})")
    print(f"daemon start, 5 MCP servers (1 unreachable): median {statistics.median(with_five) * 1000:.1f} ms "
          f"(min {min(with_five) * 1000:.1f}, max {max(with_five) * 1000:.1f}); the unreachable one failed at "
          f"{found['down_failed'] * 1000:.1f} ms ({found['down_error']}); the 4 others ready at "
          f"{found['all_ready'] * 1000:.0f} ms (each a Python MCP server starting)")


def main() -> None:
    """Run the benchmarks and print their figures."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--starts", type=int, default=5)
    args = parser.parse_args()
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    trio.run(_main, args)


if __name__ == "__main__":
    main()
