"""Benchmarks of the tool layer; prints its figures.

- search_files over a generated 20,000-file tree, with ripgrep and with the Python walk
  (a rare needle, so the whole tree is scanned; and a file-name glob);
- registry.get_definitions for 70 tools, cold and memoized (target: memoized <= 1 ms);
- dispatch of a no-op tool (the fixed cost every tool call pays).

Run: .venv/bin/python bench/bench_tools.py
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import trio

from tools.dispatch import dispatch
from tools.registry import ToolRegistry
from tools.results import ToolResult
from tools.search import find_ripgrep, search_with_python, search_with_ripgrep
from tools.testing import LocalToolContext

TREE = Path(tempfile.gettempdir()) / "hermes-actors-bench-tree"
DIRS, FILES_PER_DIR = 200, 100
NEEDLE = "NEEDLE_4f1c"


def build_tree() -> Path:
    """Generate (once) 20,000 small text files; every 2,000th file holds the needle."""
    marker = TREE / ".complete"
    if marker.exists():
        return TREE
    shutil.rmtree(TREE, ignore_errors=True)
    body = "".join(f"line {i}: some ordinary source text = value_{i}\n" for i in range(30))
    for d in range(DIRS):
        directory = TREE / f"pkg{d // 20:02}" / f"mod{d:03}"
        directory.mkdir(parents=True)
        for f in range(FILES_PER_DIR):
            n = d * FILES_PER_DIR + f
            extra = f"{NEEDLE} here\n" if n % 2_000 == 0 else ""
            (directory / f"file{f:03}.{'py' if f % 2 else 'txt'}").write_text(body + extra)
    marker.write_text("")
    return TREE


async def timed(fn: Callable[[], Awaitable[Any]], runs: int) -> list[float]:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        await fn()
        samples.append(time.perf_counter() - start)
    return samples


def report(label: str, samples: list[float], unit: str = "ms") -> None:
    scale = 1e3 if unit == "ms" else 1e6
    print(f"{label:<58} median {statistics.median(samples) * scale:9.3f} {unit}   min {min(samples) * scale:9.3f} {unit}   (n={len(samples)})")


async def bench_search(root: Path) -> None:
    rg = find_ripgrep()
    runs = 5
    if rg is not None:
        result = await search_with_ripgrep(rg, root, NEEDLE, limit=50)
        assert len(result.matches) == 10, result
        report("search_files content, 20,000 files, ripgrep", await timed(lambda: search_with_ripgrep(rg, root, NEEDLE, limit=50), runs))
        report("search_files files '*.py', 20,000 files, ripgrep (limit 1000)", await timed(lambda: search_with_ripgrep(rg, root, "*.py", "files", limit=1000), runs))
    else:
        print("ripgrep not installed: skipping the ripgrep figures")
    python = await trio.to_thread.run_sync(lambda: search_with_python(root, NEEDLE, limit=50))
    assert len(python.matches) == 10, python
    report("search_files content, 20,000 files, python walk", await timed(lambda: trio.to_thread.run_sync(lambda: search_with_python(root, NEEDLE, limit=50)), runs))
    report("search_files files '*.py', 20,000 files, python (limit 1000)", await timed(lambda: trio.to_thread.run_sync(lambda: search_with_python(root, "*.py", "files", limit=1000)), runs))


async def _noop(args: dict[str, Any], ctx: Any) -> ToolResult:
    return ToolResult({})


def make_registry(count: int) -> ToolRegistry:
    registry = ToolRegistry()
    for i in range(count):
        schema = {
            "description": f"Tool number {i} " + "does something useful. " * 10,
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "a path"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 100},
                    "mode": {"type": "string", "enum": ["a", "b", "c"]},
                },
                "required": ["path"],
            },
        }
        registry.register(f"tool_{i:02}", f"set{i % 7}", schema, _noop, check_fn=(lambda: True) if i % 3 == 0 else None)
    return registry


async def bench_registry() -> None:
    names = [f"tool_{i:02}" for i in range(70)]
    cold: list[float] = []
    for _ in range(50):
        registry = make_registry(70)
        start = time.perf_counter()
        registry.get_definitions(names)
        cold.append(time.perf_counter() - start)
    report("get_definitions, 70 tools, cold (fresh registry)", cold, "µs")
    registry = make_registry(70)
    registry.get_definitions(names)
    warm = []
    for _ in range(2_000):
        start = time.perf_counter()
        registry.get_definitions(names)
        warm.append(time.perf_counter() - start)
    report("get_definitions, 70 tools, memoized (target <= 1 ms)", warm, "µs")

    ctx = LocalToolContext(home=Path(tempfile.gettempdir()))
    args = {"path": "x", "limit": 5, "mode": "a"}
    samples = await timed(lambda: dispatch(registry, "tool_01", args, ctx), 5_000)
    report("dispatch of a no-op tool (lookup + validation + cap)", samples, "µs")


async def main() -> None:
    start = time.perf_counter()
    root = await trio.to_thread.run_sync(build_tree)
    print(f"tree: {root} ({DIRS * FILES_PER_DIR:,} files, ready in {time.perf_counter() - start:.1f} s)")
    await bench_search(root)
    await bench_registry()


if __name__ == "__main__":
    trio.run(main)
