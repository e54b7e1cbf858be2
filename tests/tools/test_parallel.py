"""Parallel-safety rules and the concurrency gate."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

from tests.tools.helpers import echo_handler
from tools.parallel import ToolConcurrencyGate, can_run_in_parallel
from tools.registry import ToolRegistry

PATH_SCHEMA = {"parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}
NO_ARGS = {"parameters": {"type": "object", "properties": {}}}


@pytest.fixture
def registry() -> ToolRegistry:
    registry = ToolRegistry()
    registry.register("read_file", "file", PATH_SCHEMA, echo_handler, parallel_safe=True, path_scoped="path")
    registry.register("write_file", "file", PATH_SCHEMA, echo_handler, parallel_safe=True, path_scoped="path")
    registry.register("patch", "file", PATH_SCHEMA, echo_handler, parallel_safe=True, path_scoped="path")
    registry.register("web_search", "web", NO_ARGS, echo_handler, parallel_safe=True)
    registry.register("terminal", "terminal", NO_ARGS, echo_handler)
    registry.register("clarify", "clarify", NO_ARGS, echo_handler, parallel_safe=True)
    return registry


class TestCanRunInParallel:
    """A batch is parallel only when every call is safe and paths do not overlap."""

    def test_safe_batch(self, registry: ToolRegistry) -> None:
        calls = [("read_file", {"path": "a.txt"}), ("write_file", {"path": "b.txt"}), ("web_search", {})]
        assert can_run_in_parallel(calls, registry, "/w")

    @pytest.mark.parametrize(
        ("calls", "why"),
        [
            ([("read_file", {"path": "a"})], "single call"),
            ([("read_file", {"path": "a"}), ("terminal", {})], "unsafe tool"),
            ([("web_search", {}), ("clarify", {})], "clarify never parallel"),
            ([("web_search", {}), ("ghost", {})], "unknown tool"),
            ([("read_file", {"path": "src/a.py"}), ("write_file", {"path": "/w/src/a.py"})], "same file"),
            ([("read_file", {"path": "src"}), ("write_file", {"path": "src/pkg/a.py"})], "parent and child"),
            ([("read_file", {"path": "./x/../a"}), ("write_file", {"path": "a"})], "normalised equal"),
            ([("read_file", {}), ("write_file", {"path": "a"})], "missing path: its files are unknown"),
            (
                [("patch", {"mode": "patch", "patch": "*** Begin Patch"}), ("write_file", {"path": "/elsewhere/a"})],
                "a V4A patch names its files in its text",
            ),
        ],
    )
    def test_not_parallel(self, registry: ToolRegistry, calls: list[tuple[str, dict[str, Any]]], why: str) -> None:
        assert not can_run_in_parallel(calls, registry, "/w"), why

    def test_siblings_do_not_overlap(self, registry: ToolRegistry) -> None:
        calls = [("write_file", {"path": "src/a"}), ("write_file", {"path": "src/ab"})]
        assert can_run_in_parallel(calls, registry, "/w")


async def _run(gate: ToolConcurrencyGate, name: str, args: dict[str, Any], log: list[str], duration: float) -> None:
    async with gate.slot(name, args, "/w"):
        log.append(f"start {name} {args.get('path', '')}".strip())
        await trio.sleep(duration)
        log.append(f"end {name} {args.get('path', '')}".strip())


class TestToolConcurrencyGate:
    """The gate runs safe calls together, serialises the rest and stays FIFO-fair."""

    async def test_limit(self, registry: ToolRegistry, autojump_clock: trio.testing.MockClock) -> None:
        gate = ToolConcurrencyGate(registry, limit=3)
        peak = 0

        async def call() -> None:
            nonlocal peak
            async with gate.slot("web_search", {}, "/w"):
                peak = max(peak, gate.statistics().running)
                await trio.sleep(1)

        start = trio.current_time()
        async with trio.open_nursery() as nursery:
            for _ in range(7):
                nursery.start_soon(call)
        assert 3 == peak
        assert 3 == trio.current_time() - start

    async def test_unsafe_runs_alone(self, registry: ToolRegistry, autojump_clock: trio.testing.MockClock) -> None:
        gate = ToolConcurrencyGate(registry)
        log: list[str] = []
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_run, gate, "web_search", {}, log, 1)
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(_run, gate, "terminal", {}, log, 1)
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(_run, gate, "web_search", {}, log, 1)
        assert ["start web_search", "end web_search", "start terminal", "end terminal", "start web_search", "end web_search"] == log

    async def test_overlapping_paths_wait(self, registry: ToolRegistry, autojump_clock: trio.testing.MockClock) -> None:
        gate = ToolConcurrencyGate(registry)
        log: list[str] = []
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_run, gate, "write_file", {"path": "src"}, log, 2)
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(_run, gate, "write_file", {"path": "src/a"}, log, 1)
            await trio.testing.wait_all_tasks_blocked()
            assert 1 == gate.statistics().waiting
        assert ["start write_file src", "end write_file src", "start write_file src/a", "end write_file src/a"] == log

    async def test_fifo_no_starvation(self, registry: ToolRegistry, autojump_clock: trio.testing.MockClock) -> None:
        """A later safe call does not jump ahead of an earlier waiting exclusive call."""
        gate = ToolConcurrencyGate(registry)
        log: list[str] = []
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_run, gate, "web_search", {}, log, 1)
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(_run, gate, "terminal", {}, log, 1)
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(_run, gate, "read_file", {"path": "x"}, log, 1)
        assert ["start terminal", "end terminal", "start read_file x"] == log[2:5]

    async def test_cancelled_waiter_leaves_queue(self, registry: ToolRegistry, autojump_clock: trio.testing.MockClock) -> None:
        gate = ToolConcurrencyGate(registry)
        log: list[str] = []
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_run, gate, "terminal", {}, log, 5)
            await trio.testing.wait_all_tasks_blocked()
            with trio.move_on_after(1):
                async with gate.slot("terminal", {}, "/w"):
                    pytest.fail("must not be admitted while another exclusive call runs")
            assert 0 == gate.statistics().waiting
        assert 0 == gate.statistics().running

    async def test_cancelled_waiter_unblocks_those_behind(self, registry: ToolRegistry, autojump_clock: trio.testing.MockClock) -> None:
        """Cancelling the head waiter lets compatible waiters behind it in."""
        gate = ToolConcurrencyGate(registry)
        log: list[str] = []
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_run, gate, "write_file", {"path": "a"}, log, 10)
            await trio.testing.wait_all_tasks_blocked()
            head = trio.CancelScope()
            nursery.start_soon(_cancellable_slot, gate, head)
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(_run, gate, "read_file", {"path": "b"}, log, 1)
            await trio.testing.wait_all_tasks_blocked()
            assert 2 == gate.statistics().waiting
            head.cancel()
            await trio.testing.wait_all_tasks_blocked()
            assert "start read_file b" in log
            assert 0 == gate.statistics().waiting
            nursery.cancel_scope.cancel()

    def test_bad_limit(self, registry: ToolRegistry) -> None:
        with pytest.raises(ValueError, match="at least 1"):
            ToolConcurrencyGate(registry, limit=0)


async def _cancellable_slot(gate: ToolConcurrencyGate, scope: trio.CancelScope) -> None:
    with scope:
        async with gate.slot("terminal", {}, "/w"):
            pytest.fail("must not be admitted")
