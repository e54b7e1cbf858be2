"""Supervision with OTP semantics: child specs, restart strategies, intensity.

A :class:`Supervisor` is an actor whose children are started from
:class:`ChildSpec` s, in order, and stopped in reverse order. When a child
exits, its restart type says whether it comes back:

- ``permanent``: always restarted;
- ``transient``: restarted only after a failure, not after a normal exit;
- ``temporary``: never restarted (and dropped when a sibling's failure
  restarts the others).

The strategy says which children restart with it: ``one_for_one`` (only that
one), ``one_for_all`` (all of them), ``rest_for_one`` (it and those started
after it). More than ``max_restarts`` restarts within ``period`` seconds (on
``trio.current_time()``, so a MockClock drives it) makes the supervisor stop
its children and fail with :class:`RestartIntensityExceeded`, escalating to
its own parent. A supervisor of many independent children (``sessions``)
counts intensity per child instead (``per_child_intensity=True``): a child
that restarts too often is given up alone and its siblings go on.

A graceful stop cancels a child's scope with a reason and waits up to its
``shutdown_timeout``; a child still running then is logged loudly and shown in
the tree (Trio cannot abandon a task; the daemon bounds its own shutdown).

A whole tree (a root supervisor and its registry) is run by :func:`open_actor_system`.

This module is built on the runtime in ``actors`` and ``actors`` never imports it: the actors
(``actors/session/``, ``actors/platform/`` ...) import both.
"""

from __future__ import annotations

import enum
import functools
import logging
import math
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import attrs
import trio

from actors.base import Actor, ActorBase, StartedProxy, error_record
from actors.errors import ActorError, ActorFailed, Rejected, RestartIntensityExceeded, SpawnFailed
from actors.handle import ActorHandle
from actors.registry import ActorRegistry
from messages.request import Request
from messages.supervision import ActorState, TreeNode

__all__ = [
    "ActorSystem",
    "ChildInfo",
    "ChildSpec",
    "RestartType",
    "StartChild",
    "Strategy",
    "Supervisor",
    "SupervisorHandle",
    "TerminateChild",
    "WhichChildren",
    "open_actor_system",
]

log = logging.getLogger("hermes_actors.supervisor")


class RestartType(enum.Enum):
    """When a child that exited is started again."""

    PERMANENT = "permanent"  # always
    TRANSIENT = "transient"  # only after a failure
    TEMPORARY = "temporary"  # never


class Strategy(enum.Enum):
    """Which children restart when one of them must."""

    ONE_FOR_ONE = "one_for_one"
    ONE_FOR_ALL = "one_for_all"
    REST_FOR_ONE = "rest_for_one"


@attrs.frozen
class ChildSpec:
    """How to start, restart and stop one child.

    ``factory`` builds a fresh actor for every (re)start: no state survives a
    restart except what the actor reloads itself.
    """

    name: str
    factory: Callable[[], Actor[Any]]
    restart: RestartType = RestartType.PERMANENT
    shutdown_timeout: float = 5.0


# -- the messages a supervisor takes ---------------------------------------------------


@attrs.frozen
class StartChild(Request[ActorHandle[Any]]):
    """Add a dynamic child; the reply is its handle."""

    spec: ChildSpec


@attrs.frozen
class TerminateChild(Request[bool]):
    """Stop a child gracefully and forget it (no restart); replies True if it existed."""

    name: str
    reason: str
    requested_by: str = "operator"


@attrs.frozen
class WhichChildren(Request["list[ChildInfo]"]):
    """Ask for the children; the reply is a list of :class:`ChildInfo`."""


@attrs.frozen
class ChildInfo:
    """One child as its supervisor sees it."""

    name: str
    path: str
    restart: RestartType
    state: ActorState
    restarts: int
    overdue: str = ""


SupervisorMessage = StartChild | TerminateChild | WhichChildren


# -- state -------------------------------------------------------------------------------


class _ChildRecord:
    """A child slot: its spec and the instance currently filling it."""

    __slots__ = ("actor", "overdue", "restart_times", "restart_when_stopped", "restarting", "restarts", "spec", "stopping")

    def __init__(self, spec: ChildSpec) -> None:
        self.spec = spec
        self.actor: Actor[Any] | None = None
        self.restarts = 0
        self.restart_times: deque[float] = deque()
        # Invariant: stopping is True while the supervisor itself is ending this instance.
        self.stopping = False
        # Invariant: set when an instance outlived its shutdown timeout and must be
        # restarted once it is really gone (its path is still taken until then).
        self.restart_when_stopped = False
        # Invariant: True while a new instance is being started in place of a failed one.
        self.restarting = False
        # Why the current instance is still running after it was asked to stop ("" when it is not).
        self.overdue = ""


@attrs.frozen
class _ChildExit:
    record: _ChildRecord
    actor: Actor[Any]
    failure: ActorFailed | None


class SupervisorHandle(ActorHandle[SupervisorMessage]):
    """A supervisor's handle, with its requests spelled out."""

    __slots__ = ()

    async def start_child(self, spec: ChildSpec) -> ActorHandle[Any]:
        """Start a dynamic child and return its handle once it is ready."""
        return await self.ask(StartChild(spec))

    async def terminate_child(self, name: str, reason: str, *, requested_by: str = "operator") -> bool:
        """Stop a child gracefully; it is not restarted."""
        return await self.ask(TerminateChild(name, reason, requested_by))

    async def which_children(self) -> list[ChildInfo]:
        """The children, in start order."""
        return await self.ask(WhichChildren())


class Supervisor(Actor[SupervisorMessage]):
    """An actor that starts, watches and restarts its children by policy."""

    kind = "supervisor"
    ref: SupervisorHandle

    def __init__(
        self,
        specs: Sequence[ChildSpec] = (),
        *,
        strategy: Strategy = Strategy.ONE_FOR_ONE,
        max_restarts: int = 3,
        period: float = 5.0,
        kind: str | None = None,
        per_child_intensity: bool = False,
    ) -> None:
        super().__init__()
        self.per_child_intensity = per_child_intensity
        if kind is not None:
            self.kind = kind
        self.strategy = strategy
        self.max_restarts = max_restarts
        self.period = period
        self.ref = SupervisorHandle(self)
        self._initial_specs = list(specs)
        # Invariant: insertion order is start order.
        self._records: dict[str, _ChildRecord] = {}
        self._restart_times: deque[float] = deque()
        self._lock = trio.Lock()
        self._exits_send, self._exits_receive = trio.open_memory_channel[_ChildExit](math.inf)
        self._shutdown = trio.Event()

    # -- loop ------------------------------------------------------------------------------

    async def on_start(self) -> None:
        for spec in self._initial_specs:
            await self._add(spec)

    async def main(self) -> None:
        assert self._nursery is not None
        self._nursery.start_soon(self._watch_exits)
        self._nursery.start_soon(self._watch_shutdown)
        await super().main()

    async def handle(self, message: SupervisorMessage) -> Any:
        async with self._lock:
            if isinstance(message, StartChild):
                try:
                    return await self._add(message.spec)
                except (ActorError, SpawnFailed) as exc:
                    raise Rejected(exc) from exc
            if isinstance(message, TerminateChild):
                return await self._remove(message.name, message.reason, message.requested_by)
            if isinstance(message, WhichChildren):
                return self._child_infos()
        raise ActorError(self.path, f"unexpected message {type(message).__name__}")

    def request_stop(self, reason: str, *, requested_by: str = "operator") -> None:
        """Stop gracefully: children in reverse start order, then this supervisor."""
        if self._scope is None or self._nursery is None:
            super().request_stop(reason, requested_by=requested_by)
            return
        self.cancel_reason = f"{reason} (requested by {requested_by})"
        self.state = ActorState.STOPPING
        self._shutdown.set()

    def snapshot_details(self) -> dict[str, Any]:
        details: dict[str, Any] = {"strategy": self.strategy.value, "children": len(self._records)}
        # What the supervisor knows of its children that the children cannot say themselves.
        restarting = [name for name, record in self._records.items() if record.restarting]
        if restarting:
            details["restarting"] = restarting
        overdue = {name: record.overdue for name, record in self._records.items() if record.overdue}
        if overdue:
            details["overdue"] = overdue
        return details

    def children(self) -> list[ActorBase]:
        """Live children in start order (a restarted child keeps its place)."""
        live = self._children or {}
        ordered: list[ActorBase] = [
            record.actor
            for name, record in self._records.items()
            if record.actor is not None and live.get(name) is record.actor
        ]
        if len(ordered) == len(live):
            return ordered
        seen = {id(actor) for actor in ordered}
        return ordered + [actor for actor in live.values() if id(actor) not in seen]

    async def _watch_shutdown(self) -> None:
        await self._shutdown.wait()
        reason = self.cancel_reason or "shutdown"
        async with self._lock:
            await self._stop_all(reason)
        assert self._scope is not None
        self._scope.cancel(reason=reason)

    async def _watch_exits(self) -> None:
        async for child_exit in self._exits_receive:
            async with self._lock:
                await self._on_exit(child_exit)

    # -- children --------------------------------------------------------------------------

    async def _add(self, spec: ChildSpec) -> ActorHandle[Any]:
        if spec.name in self._records:
            raise ActorError(f"{self.path}/{spec.name}".lstrip("/"), "a child with this name already exists")
        record = _ChildRecord(spec)
        self._records[spec.name] = record
        try:
            return await self._start(record)
        except BaseException:
            del self._records[spec.name]
            raise

    async def _start(self, record: _ChildRecord) -> ActorHandle[Any]:
        assert self._nursery is not None
        child = record.spec.factory()
        child.restarts = record.restarts
        if record.actor is not None:
            child.last_error = record.actor.last_error
        record.actor = child
        record.stopping = False
        record.restart_when_stopped = False
        record.overdue = ""
        runner = functools.partial(self._supervise, record)
        return await self._start_child(child, record.spec.name, runner)

    async def _supervise(self, record: _ChildRecord, child: Actor[Any], *, task_status: trio.TaskStatus[Any]) -> None:
        proxy = StartedProxy(task_status)
        failure: ActorFailed | None = None
        try:
            await child.run(task_status=proxy)
        except ActorFailed as exc:
            if not proxy.was_started:
                raise
            failure = exc
        self._exits_send.send_nowait(_ChildExit(record, child, failure))

    async def _remove(self, name: str, reason: str, requested_by: str) -> bool:
        record = self._records.pop(name, None)
        if record is None:
            return False
        await self._terminate(record, reason, requested_by)
        return True

    def _child_infos(self) -> list[ChildInfo]:
        return [
            ChildInfo(
                name=name,
                path=record.actor.path if record.actor else "",
                restart=record.spec.restart,
                state=record.actor.state if record.actor else ActorState.STOPPED,
                restarts=record.restarts,
                overdue=record.overdue,
            )
            for name, record in self._records.items()
        ]

    async def _terminate(self, record: _ChildRecord, reason: str, requested_by: str) -> bool:
        """Stop one child within its shutdown timeout; False if it is still running."""
        actor = record.actor
        if actor is None or actor.stopped:
            return True
        record.stopping = True
        actor.request_stop(reason, requested_by=requested_by)
        with trio.move_on_after(record.spec.shutdown_timeout):
            await actor.wait_stopped()
        if actor.stopped:
            return True
        log.error(
            "SHUTDOWN TIMEOUT: %s is still running %.1fs after it was asked to stop (%s)",
            actor.path, record.spec.shutdown_timeout, reason,
        )
        # The supervisor's record says so (its snapshot and which_children show it); the child's
        # own state is the child's to write.
        record.overdue = f"did not stop within its {record.spec.shutdown_timeout:g}s shutdown timeout"
        return False

    async def _stop_all(self, reason: str) -> None:
        for record in reversed(list(self._records.values())):
            await self._terminate(record, reason, self.path or "supervisor")

    # -- restart policy ------------------------------------------------------------------------

    async def _on_exit(self, child_exit: _ChildExit) -> None:
        record = child_exit.record
        if record.actor is not child_exit.actor or self._records.get(record.spec.name) is not record:
            return  # an instance already replaced or removed
        if record.stopping:
            if record.restart_when_stopped:
                await self._restart_records([record])
            return
        failed = child_exit.failure is not None
        if failed:
            log.warning("child %s failed: %s", child_exit.actor.path, child_exit.failure)
        restart = record.spec.restart is RestartType.PERMANENT or (
            record.spec.restart is RestartType.TRANSIENT and failed
        )
        if not restart:
            del self._records[record.spec.name]
            return
        if not await self._count_restart(child_exit):
            return
        affected = self._affected_by(record)
        for other in reversed(affected):
            if other is not record:
                await self._terminate(other, f"restart after {record.spec.name} exited", self.path or "supervisor")
        for other in affected:
            if other is not record and other.spec.restart is RestartType.TEMPORARY:
                del self._records[other.spec.name]
        await self._restart_records([r for r in affected if r.spec.name in self._records])

    def _affected_by(self, record: _ChildRecord) -> list[_ChildRecord]:
        records = list(self._records.values())
        if self.strategy is Strategy.ONE_FOR_ONE:
            return [record]
        if self.strategy is Strategy.ONE_FOR_ALL:
            return records
        return records[records.index(record):]

    async def _count_restart(self, child_exit: _ChildExit) -> bool:
        """Record a restart; False when the child is given up (per-child intensity).

        Raises:
            RestartIntensityExceeded: too many restarts; every child was stopped.
        """
        record = child_exit.record
        times = record.restart_times if self.per_child_intensity else self._restart_times
        now = trio.current_time()
        times.append(now)
        while times and times[0] < now - self.period:
            times.popleft()
        if len(times) <= self.max_restarts:
            return True
        message = (
            f"more than {self.max_restarts} restarts within {self.period:g}s "
            f"(last: {child_exit.actor.path})"
        )
        if self.per_child_intensity:
            log.error("supervisor %s gives up child %s: %s", self.path or "supervisor", record.spec.name, message)
            self._records.pop(record.spec.name, None)
            return False
        log.error("supervisor %s gives up: %s", self.path or "supervisor", message)
        await self._stop_all("restart intensity exceeded")
        error = RestartIntensityExceeded(self.path, message)
        error.__cause__ = child_exit.failure
        self.last_error = error_record(error)
        raise error

    async def _restart_records(self, records: list[_ChildRecord]) -> None:
        for record in records:
            actor = record.actor
            if actor is not None and not actor.stopped:
                record.restart_when_stopped = True  # its path is taken until it really ends
                continue
            record.restarts += 1
            record.restarting = True
            try:
                while True:
                    try:
                        await self._start(record)
                        break
                    except SpawnFailed as exc:
                        log.warning("restart of %s failed: %s", exc.path, exc)
                        failure = ActorFailed(exc.path, str(exc))
                        failure.__cause__ = exc.__cause__
                        failed = record.actor
                        assert failed is not None, "_start binds the new child before it starts it"
                        if not await self._count_restart(_ChildExit(record, failed, failure)):
                            break
            finally:
                record.restarting = False


@attrs.define
class ActorSystem:
    """One running actor tree: its root supervisor and registry."""

    registry: ActorRegistry
    root: SupervisorHandle

    def lookup(self, path: str) -> ActorHandle[Any]:
        """The live actor at ``path`` (``""`` is the root).

        Raises:
            ActorNotFound: nothing is running there.
        """
        return self.registry.lookup(path)

    def tree(self, path: str = "") -> TreeNode:
        """A consistent snapshot of the whole tree (or the subtree at ``path``)."""
        return self.registry.tree(path)


@asynccontextmanager
async def open_actor_system(
    specs: Sequence[ChildSpec] = (),
    *,
    strategy: Strategy = Strategy.ONE_FOR_ONE,
    max_restarts: int = 3,
    period: float = 5.0,
    shutdown_reason: str = "system shutdown",
) -> AsyncIterator[ActorSystem]:
    """Run a root supervisor with ``specs`` for the duration of the block.

    Leaving the block stops the tree gracefully, children in reverse order.
    If the root escalates, the block is cancelled and ActorFailed is raised.
    """
    registry = ActorRegistry()
    root = Supervisor(specs, strategy=strategy, max_restarts=max_restarts, period=period)
    root.bind_root(registry)
    async with trio.open_nursery() as nursery:
        handle = await nursery.start(root.run)
        try:
            yield ActorSystem(registry, handle)
        finally:
            root.request_stop(shutdown_reason, requested_by="system")
