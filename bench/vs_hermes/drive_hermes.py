"""The Hermes Agent side of the side-by-side benchmark, run by the Hermes venv's Python.

Sessions are ``AIAgent`` objects in one process, each turn a ``run_conversation`` call in its own
thread, as Hermes's gateway hosts them. Every figure is this process's: its CPU is Hermes's, and
``tree_cpu_s`` adds every process its tools started (see :mod:`tree_cpu`).
Prints one JSON object. Run by ``run.py``; the environment (``HERMES_HOME``, ``TERMINAL_CWD``,
the fake model's URL) comes from there.
"""

from __future__ import annotations

import json
import os
import statistics
import threading
import time
from typing import Any

from code_calls import marker
from tree_cpu import TreeCpu
from vs_common import parse_args, rss_kb, sleeping_descendant
from run_agent import AIAgent


def agent(url: str, toolsets: list[str], **extra: Any) -> AIAgent:
    """One session's agent, quiet, with no context files, memory or trajectories."""
    return AIAgent(
        base_url=url, api_key="sk-bench", provider="custom", model="bench-model", quiet_mode=True,
        enabled_toolsets=toolsets, skip_context_files=True, skip_memory=True, save_trajectories=False,
        max_iterations=20, **extra,
    )


def turns(url: str, sessions: int, count: int) -> dict[str, Any]:
    """``sessions`` sessions at once, each running ``count`` turns of one ``terminal true``."""
    agents = [agent(url, ["terminal"]) for _ in range(sessions)]
    done, failed = [0], [0]
    lock = threading.Lock()

    def drive(one: AIAgent) -> None:
        history: list[dict[str, Any]] = []
        for turn in range(count):
            result = one.run_conversation(f"turn {turn}: check the machine [[bench tools=1]]", conversation_history=history)
            history = result.get("messages") or history
            with lock:
                if result.get("final_response") == "All checks passed.":
                    done[0] += 1
                else:
                    failed[0] += 1

    threads = [threading.Thread(target=drive, args=(one,)) for one in agents]
    tree = TreeCpu(f"vs-hermes-{os.getpid()}")
    tree.enter()
    try:
        start, cpu, tree_cpu = time.perf_counter(), time.process_time(), tree.seconds()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        wall, cpu, tree_cpu = time.perf_counter() - start, time.process_time() - cpu, tree.seconds() - tree_cpu
    finally:
        tree.leave()
    return {"turns": done[0], "failed": failed[0], "wall_s": wall, "cpu_s": cpu, "tree_cpu_s": tree_cpu,
            "tree_cpu_method": tree.method}


def interrupt(url: str, rounds: int) -> dict[str, Any]:
    """A turn running ``sleep 30`` is interrupted; milliseconds until the turn returned."""
    one = agent(url, ["terminal"])
    samples = []
    for _ in range(rounds):
        started = threading.Event()
        box: dict[str, float] = {}

        def run() -> None:
            one.run_conversation("[[bench sleep=30]]", conversation_history=[])
            box["returned"] = time.perf_counter()

        thread = threading.Thread(target=run)
        thread.start()
        # The command runs once a `sleep 30` child of this process exists.
        while not started.is_set():
            started.wait(0.01)
            if sleeping_descendant(os.getpid()):
                started.set()
        asked = time.perf_counter()
        one.interrupt("stop")
        thread.join(60)
        samples.append((box.get("returned", float("inf")) - asked) * 1000)
    return {"interrupt_ms": statistics.median(samples), "samples": samples}


def idle(url: str, sessions: int) -> dict[str, Any]:
    """``sessions`` idle sessions created: RSS and CPU each."""
    agent(url, ["terminal"])
    before, cpu = rss_kb(), time.process_time()
    kept = [agent(url, ["terminal"]) for _ in range(sessions)]
    cpu = time.process_time() - cpu
    return {"rss_kb_each": (rss_kb() - before) / len(kept), "create_ms_each": cpu / sessions * 1000}


def code(url: str, kind: str, calls: int, path: str, rounds: int) -> dict[str, Any]:
    """An execute_code script timing ``calls`` calls of ``kind`` (figures in the server's stats)."""
    one = agent(url, ["terminal", "file", "code_execution"])
    ok = 0
    for number in range(rounds):
        result = one.run_conversation(marker(kind, calls, path, number), conversation_history=[])
        ok += result.get("final_response") == "Measured."
    return {"conversations_ok": ok}


def stream(url: str, rounds: int, chunks: int, gap: float) -> dict[str, Any]:
    """Milliseconds from a message to its first streamed token."""
    samples = []
    for _ in range(rounds):
        first: list[float] = []
        one = agent(url, [], stream_delta_callback=lambda text: first.append(time.perf_counter()) if text and not first else None)
        start = time.perf_counter()
        one.run_conversation(f"[[bench slow={chunks} gap={gap}]]", conversation_history=[])
        samples.append((first[0] - start) * 1000 if first else float("inf"))
    return {"first_token_ms": statistics.median(samples)}


def main() -> None:
    """Run one workload and print its figures as JSON."""
    args = parse_args()
    if args.workload == "turns":
        out = turns(args.url, args.sessions, args.turns)
    elif args.workload == "interrupt":
        out = interrupt(args.url, args.rounds)
    elif args.workload == "idle":
        out = idle(args.url, args.sessions)
    elif args.workload == "code":
        out = code(args.url, args.kind, args.calls, args.path, args.rounds)
    else:
        out = stream(args.url, args.rounds, args.chunks, args.gap)
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
