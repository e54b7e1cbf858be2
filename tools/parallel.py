"""When tool calls may run side by side.

One rule, shared by the session's tool batches and the sandbox's concurrent
RPC calls: a call may run beside others only if its tool is parallel-safe, it
is not ``clarify`` (which waits on a human and would interleave results), and
its paths do not overlap any other running call's paths (a directory and
anything under it overlap).  ``can_run_in_parallel`` answers for a whole
batch; ``ToolConcurrencyGate`` enforces the rule call by call, FIFO-fair.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import PurePath
from typing import TYPE_CHECKING, Any

import attrs
import trio

if TYPE_CHECKING:
    from tools.registry import ToolRegistry

__all__ = [
    "DEFAULT_MAX_TOOL_WORKERS",
    "NEVER_PARALLEL_TOOLS",
    "GateStatistics",
    "ToolConcurrencyGate",
    "can_run_in_parallel",
    "paths_overlap",
]

DEFAULT_MAX_TOOL_WORKERS = 8
NEVER_PARALLEL_TOOLS = frozenset({"clarify"})


def paths_overlap(a: PurePath, b: PurePath) -> bool:
    """True when ``a`` and ``b`` are the same path or one contains the other."""
    return a == b or a in b.parents or b in a.parents


def _resolve(raw: object, cwd: str) -> PurePath:
    # Lexical resolution only: no filesystem access, so it is safe on the event loop.
    text = raw if isinstance(raw, str) else "."
    return PurePath(os.path.normpath(os.path.join(cwd, os.path.expanduser(text))))


@attrs.frozen(eq=False)
class _Claim:
    """What one running call holds: everything (exclusive) or a set of paths."""

    exclusive: bool
    paths: tuple[PurePath, ...]

    def conflicts(self, other: _Claim) -> bool:
        if self.exclusive or other.exclusive:
            return True
        return any(paths_overlap(a, b) for a in self.paths for b in other.paths)


def _claim(registry: ToolRegistry, name: str, args: Mapping[str, Any], cwd: str) -> _Claim:
    entry = registry.get(name)
    if entry is None or name in NEVER_PARALLEL_TOOLS or not entry.parallel_safe:
        return _Claim(exclusive=True, paths=())
    if any(not args.get(arg) for arg in entry.path_scoped):
        # The call names its files elsewhere (a V4A patch lists them in its text): they cannot be
        # known here, so it runs alone.
        return _Claim(exclusive=True, paths=())
    paths = tuple(_resolve(args.get(arg), cwd) for arg in entry.path_scoped)
    return _Claim(exclusive=False, paths=paths)


def can_run_in_parallel(
    calls: Sequence[tuple[str, Mapping[str, Any]]], registry: ToolRegistry, cwd: str
) -> bool:
    """Whether a batch of ``(tool name, args)`` calls may run concurrently.

    False for fewer than two calls (nothing to gain), when any call is
    ``clarify``, unknown or not parallel-safe, or when two path-scoped calls
    touch overlapping paths (resolved against ``cwd``).
    """
    if len(calls) < 2:
        return False
    claims = [_claim(registry, name, args if isinstance(args, Mapping) else {}, cwd) for name, args in calls]
    if any(claim.exclusive for claim in claims):
        return False
    return not any(a.conflicts(b) for i, a in enumerate(claims) for b in claims[i + 1 :])


@attrs.frozen
class GateStatistics:
    """A snapshot of a ``ToolConcurrencyGate``."""

    limit: int
    running: int
    waiting: int
    exclusive_running: bool


@attrs.define(eq=False)
class _Waiter:
    claim: _Claim
    admitted: trio.Event = attrs.field(factory=trio.Event)


class ToolConcurrencyGate:
    """Admits tool calls so that only safe combinations run at once.

    A call that is not parallel-safe runs alone; calls with overlapping paths
    wait for each other; at most ``limit`` run together.  Waiters are admitted
    strictly in arrival order, so a call that needs to run alone is never
    starved by a stream of parallel-safe ones.

    Args:
        registry: tells which tools are parallel-safe and which arguments hold paths.
        limit: most calls running at once.
    """

    def __init__(self, registry: ToolRegistry, limit: int = DEFAULT_MAX_TOOL_WORKERS) -> None:
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        self._registry = registry
        self._limit = limit
        self._running: list[_Claim] = []
        # Invariant: a waiter is in the queue exactly until its event is set.
        self._queue: deque[_Waiter] = deque()

    def statistics(self) -> GateStatistics:
        """Current occupancy of the gate."""
        return GateStatistics(
            limit=self._limit,
            running=len(self._running),
            waiting=len(self._queue),
            exclusive_running=any(claim.exclusive for claim in self._running),
        )

    @asynccontextmanager
    async def slot(self, name: str, args: Mapping[str, Any], cwd: str) -> AsyncIterator[None]:
        """Wait until tool ``name`` with ``args`` may run, and hold its place while it does."""
        claim = _claim(self._registry, name, args if isinstance(args, Mapping) else {}, cwd)
        await self._acquire(claim)
        try:
            yield
        finally:
            self._release(claim)

    def _admissible(self, claim: _Claim) -> bool:
        return len(self._running) < self._limit and not any(claim.conflicts(other) for other in self._running)

    async def _acquire(self, claim: _Claim) -> None:
        await trio.lowlevel.checkpoint_if_cancelled()
        if not self._queue and self._admissible(claim):
            self._running.append(claim)
            await trio.lowlevel.cancel_shielded_checkpoint()
            return
        waiter = _Waiter(claim)
        self._queue.append(waiter)
        try:
            await waiter.admitted.wait()
        except BaseException:
            if waiter.admitted.is_set():
                self._release(claim)
            else:
                self._queue.remove(waiter)
                self._admit_waiters()
            raise

    def _release(self, claim: _Claim) -> None:
        self._running.remove(claim)
        self._admit_waiters()

    def _admit_waiters(self) -> None:
        while self._queue and self._admissible(self._queue[0].claim):
            waiter = self._queue.popleft()
            self._running.append(waiter.claim)
            waiter.admitted.set()


