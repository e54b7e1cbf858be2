"""Benchmark of the terminal tool: prints its figures (not a timed test).

Figures:
- foreground ``terminal("true")`` end to end through ``dispatch`` (argument validation,
  approval check, bash spawn in its own group, state capture, JSON result); target <= 15 ms median;
  and the CPU its shell takes (the wrapper, the command, the EXIT trap's state dump);
- the same for a command with 1 MB of output (drain, cap, ANSI clean);
- background start -> exit -> process(wait);
- dangerous-command detection per call, for a short compound command and for a long heredoc.

Run: ``.venv/bin/python bench/bench_terminal.py [runs]``
"""

from __future__ import annotations

import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

import trio

from config.terminal import ApprovalsConfig, TerminalConfig
from tools.approval_patterns import judge
from tools.dispatch import dispatch
from tools.registry import ToolRegistry
from tools.terminal import register_terminal_tools
from tools.testing import LocalToolContext


def _report(label: str, samples: list[float]) -> None:
    ordered = sorted(samples)
    p90 = ordered[int(len(ordered) * 0.9) - 1]
    print(
        f"{label:<44} median {statistics.median(ordered) * 1000:7.2f} ms   "
        f"p90 {p90 * 1000:7.2f} ms   min {ordered[0] * 1000:7.2f} ms   (n={len(ordered)})"
    )


def _children_cpu() -> float:
    """CPU seconds (user + system) of the child processes reaped so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


async def _time_calls(registry: ToolRegistry, ctx: LocalToolContext, name: str, args: dict, runs: int) -> list[float]:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        await dispatch(registry, name, args, ctx)
        samples.append(time.perf_counter() - start)
    return samples


async def main(runs: int) -> None:
    registry = ToolRegistry()
    register_terminal_tools(registry, TerminalConfig(), ApprovalsConfig())
    with tempfile.TemporaryDirectory() as tmp:
        async with trio.open_nursery() as nursery:
            ctx = LocalToolContext(home=Path(tmp), cwd=tmp, nursery=nursery)
            await dispatch(registry, "terminal", {"command": "true"}, ctx)  # warm-up
            before = _children_cpu()
            _report('terminal("true") via dispatch', await _time_calls(registry, ctx, "terminal", {"command": "true"}, runs))
            print(f"{'  its shell process, CPU per command':<44} {(_children_cpu() - before) / runs * 1000:7.2f} ms")
            _report(
                'terminal("cd /tmp; export A=1")',
                await _time_calls(registry, ctx, "terminal", {"command": "cd /tmp; export A=1"}, runs),
            )
            big = {"command": "head -c 1000000 /dev/zero | tr '\\0' 'x' | fold -w 100"}
            _report("terminal(1 MB of output, capped)", await _time_calls(registry, ctx, "terminal", big, max(5, runs // 10)))
            samples = []
            for _ in range(max(5, runs // 10)):
                start = time.perf_counter()
                started = (await dispatch(registry, "terminal", {"command": "echo hi", "background": True}, ctx)).text
                process_id = started.split('"session_id": "')[1].split('"')[0]
                await dispatch(registry, "process", {"action": "wait", "session_id": process_id, "timeout": 10}, ctx)
                samples.append(time.perf_counter() - start)
            _report("background start + process(wait)", samples)
            nursery.cancel_scope.cancel()
    heredoc = "cat > notes.md <<'EOF'\n" + "Line %d of the notes, with nothing to ask about.\n" * 100 + "EOF"
    for label, command, count in (
        ("one compound command", "cd build && make -j8 2>&1 | tee log.txt; rm -rf out/ && git status", 20_000),
        ("a 5 KB heredoc of text", heredoc, 2_000),
    ):
        start = time.perf_counter()
        for _ in range(count):
            judge(command)
        print(f"{'judge (' + label + ')':<44} {(time.perf_counter() - start) / count * 1e6:7.2f} µs per call")


if __name__ == "__main__":
    trio.run(main, int(sys.argv[1]) if len(sys.argv) > 1 else 200)
