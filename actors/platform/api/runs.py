"""Runs: agent turns started over HTTP and followed (or stopped) later.

``POST /v1/runs`` admits a run, sends its input and returns at once; a task in
the API actor's nursery follows the turn, keeping the run's events (the
session's own and its subagents', numbered by the session's sequence) so
``GET /v1/runs/{id}/events`` can stream them and resume after ``Last-Event-ID``.
A stop asked for before the run's turn has started (it is queued behind
another client's turn) waits for it to start, so another client's turn is
never interrupted. Finished runs are kept up to ``max_stored_runs``, oldest dropped first.
"""

from __future__ import annotations

import bisect
import enum
import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import trio

from actors.platform.api.errors import Conflict, NotFound
from actors.platform.api.gateway import Admission, ApiGateway
from actors.platform.api.turns import TurnLost, TurnWatch
from actors.platform.api.wire import RunRequest, TurnUsage, event_payload, new_id
from messages.events import ApprovalRequested, RequestResolved
from messages.session import AnswerRequest

__all__ = ["Run", "RunRegistry", "RunStatus"]

log = logging.getLogger("hermes_actors.api")

#: Runs a helper task in the API actor's scope (``ActorBase.start_soon``): it ends with the actor.
Spawn = Callable[..., None]

#: Events one run keeps for ``/events`` readers; past it the oldest go (a resume from before them is told so).
RUN_EVENT_LIMIT = 5000


class RunStatus(enum.Enum):
    """Where a run is in its life."""

    QUEUED = "queued"  # sent; waiting behind another turn of its session
    RUNNING = "running"  # its turn is running
    STOPPING = "stopping"  # a stop was asked for; the turn has not ended yet
    COMPLETED = "completed"  # the turn finished normally
    STOPPED = "stopped"  # the turn was interrupted
    FAILED = "failed"  # the turn ended with an error, or its session went away

    @property
    def finished(self) -> bool:
        """True for the final states."""
        return self in (RunStatus.COMPLETED, RunStatus.STOPPED, RunStatus.FAILED)


class Run:
    """One run's record: its status, result and event log.

    ``session_id`` is the session's own id; ``session_name`` the name the client gave it
    (None for an ephemeral session), the only one it is shown.
    """

    def __init__(self, run_id: str, session_id: str, session_name: str | None, model: str | None) -> None:
        self.run_id = run_id
        self.session_id = session_id
        self.session_name = session_name
        self.model = model
        self.created_at = int(time.time())
        self.status = RunStatus.QUEUED
        self.output: str | None = None
        self.error: str | None = None
        self.usage = TurnUsage()
        self.stop_requested = False
        # Invariant: events are in increasing ``id`` (the session's event sequence number).
        self.events: list[dict[str, Any]] = []
        # The highest event id dropped for the limit (None: nothing dropped).
        self.dropped_through: int | None = None
        # The approvals the run waits for, oldest first: what ``GET`` shows a client deciding on them.
        self.pending_approvals: dict[str, dict[str, Any]] = {}
        self._changed = trio.Event()

    def to_json(self) -> dict[str, Any]:
        """The run as ``GET /v1/runs/{id}`` shows it."""
        return {
            "run_id": self.run_id,
            "object": "hermes.run",
            "status": self.status.value,
            "session_id": self.session_name,
            "model": self.model,
            "created_at": self.created_at,
            "output": self.output,
            "error": self.error,
            "usage": self.usage.to_json(),
            "last_event_id": self.events[-1]["id"] if self.events else None,
            "pending_approvals": list(self.pending_approvals.values()),
        }

    @property
    def ephemeral(self) -> bool:
        """True when the run's session exists only for it."""
        return self.session_name is None

    def changed(self) -> None:
        """Wake everyone waiting for news of this run."""
        self._changed.set()
        self._changed = trio.Event()

    async def wait_changed(self) -> None:
        """Wait for the next event or status change."""
        await self._changed.wait()

    def record(self, payload: dict[str, Any]) -> None:
        """Keep one event (its ``id`` above every kept one), dropping the oldest past the limit."""
        self.events.append(payload)
        if len(self.events) > RUN_EVENT_LIMIT:
            excess = len(self.events) - RUN_EVENT_LIMIT
            self.dropped_through = self.events[excess - 1]["id"]
            del self.events[:excess]
        self.changed()

    def events_after(self, last_id: int | None) -> list[dict[str, Any]]:
        """The events numbered after ``last_id`` (all of them for None).

        When ``last_id`` is older than the oldest kept event, a ``fell_behind``
        event (carrying ``last_id`` as its id) says so first.
        """
        if last_id is None:
            return list(self.events)
        start = bisect.bisect_right(self.events, last_id, key=lambda event: event["id"])
        found = self.events[start:]
        if self.dropped_through is not None and last_id < self.dropped_through and found:
            notice = {"type": "fell_behind", "id": last_id, "requested": last_id, "oldest_available": found[0]["id"]}
            return [notice, *found]
        return found


class RunRegistry:
    """Every run of this API server.

    Args:
        gateway: admission and sessions.
        spawn: runs a helper task in the API actor's scope (the actor's ``start_soon``).
        keep: finished runs kept.
    """

    def __init__(self, gateway: ApiGateway, spawn: Spawn, keep: int) -> None:
        self._gateway = gateway
        self._spawn = spawn
        self._keep = keep
        self._runs: OrderedDict[str, Run] = OrderedDict()

    def __len__(self) -> int:
        return len(self._runs)

    def active(self) -> int:
        """Runs not finished yet."""
        return sum(1 for run in self._runs.values() if not run.status.finished)

    def get(self, run_id: str) -> Run:
        """The run ``run_id``.

        Raises:
            NotFound: unknown (or long since dropped).
        """
        run = self._runs.get(run_id)
        if run is None:
            raise NotFound(f"no run {run_id!r}")
        return run

    async def create(self, request: RunRequest) -> Run:
        """Admit and start a run; it goes on in the background.

        Raises:
            TooManyRuns / NotFound: from admission or the session.
        """
        admission = await self._gateway.admit()
        ephemeral = request.session_id is None
        session_id: str | None = None
        try:
            if request.session_id is None:
                session_id = await self._gateway.open_ephemeral(request.instructions, interactive=True, model=request.model)
            else:
                session_id = await self._gateway.open_named(request.session_id, request.instructions, interactive=True)
            run = Run(new_id("run_"), session_id, request.session_id, request.model)
            watch = await self._gateway.start_turn(session_id, request.input, label=f"api:{run.run_id}", fresh=ephemeral)
        except BaseException:
            admission.release()
            if ephemeral and session_id is not None:
                await self._gateway.discard(session_id, "api run failed to start")
            raise
        if watch.status == "started":
            run.status = RunStatus.RUNNING
        self._runs[run.run_id] = run
        self._evict()
        self._spawn(self._follow, run, watch, admission)
        return run

    async def stop(self, run_id: str) -> dict[str, Any]:
        """Interrupt the run's turn (once it has started); ``{"run_id", "status": "stopping"}``.

        Raises:
            NotFound: unknown run.
        """
        run = self.get(run_id)
        if run.status.finished:
            return {"run_id": run.run_id, "status": run.status.value}
        run.stop_requested = True
        if run.status is RunStatus.RUNNING:
            await self._gateway.interrupt(run.session_id, requested_by=f"api run {run.run_id}")
        run.status = RunStatus.STOPPING
        run.changed()
        return {"run_id": run.run_id, "status": RunStatus.STOPPING.value}

    async def answer(self, run_id: str, choice: str, request_id: str | None) -> dict[str, Any]:
        """Answer a pending approval of the run (the latest one when ``request_id`` is None).

        Raises:
            NotFound: unknown run.
            Conflict: nothing is pending, or it was answered already.
        """
        run = self.get(run_id)
        target = request_id or (list(run.pending_approvals)[-1] if run.pending_approvals else None)
        if target is None:
            raise Conflict(f"run {run_id} has no pending approval")
        handle = self._gateway.sessions.live(run.session_id)
        answered = handle is not None and await handle.ask(AnswerRequest(target, choice, answered_by=f"api run {run_id}"))
        if not answered:
            raise Conflict(f"approval {target!r} is not pending (answered already, expired, or unknown)")
        return {"run_id": run.run_id, "request_id": target, "answer": choice}

    async def _follow(self, run: Run, watch: TurnWatch, admission: Admission) -> None:
        try:
            await self._record(run, watch)
        except TurnLost as exc:
            run.status, run.error = RunStatus.FAILED, str(exc)
        except Exception as exc:
            log.error("api: run %s failed: %r", run.run_id, exc, exc_info=exc)
            run.status, run.error = RunStatus.FAILED, f"internal error: {type(exc).__name__}"
        finally:
            watch.close()
            admission.release()
            if not run.status.finished:  # cancelled: the daemon is stopping
                run.status, run.error = RunStatus.FAILED, "the API server stopped"
            run.changed()
            if run.ephemeral:
                await self._gateway.discard(run.session_id, f"api run {run.run_id} finished")

    async def _record(self, run: Run, watch: TurnWatch) -> None:
        while (event := await watch.next_event()) is not None:
            if not run.events:  # the turn's TurnStarted: it has begun
                if run.stop_requested:
                    await self._gateway.interrupt(run.session_id, requested_by=f"api run {run.run_id}")
                elif run.status is RunStatus.QUEUED:
                    run.status = RunStatus.RUNNING
            if isinstance(event, ApprovalRequested):
                run.pending_approvals[event.request_id] = {
                    "request_id": event.request_id, "command": event.command, "description": event.description,
                    "choices": list(event.choices),
                }
            elif isinstance(event, RequestResolved):
                run.pending_approvals.pop(event.request_id, None)
            payload = event_payload(event)
            payload["id"] = event.seq
            run.record(payload)
        outcome = watch.outcome
        assert outcome is not None
        run.output, run.usage = outcome.final_text, outcome.usage
        if outcome.reason == "error":
            run.status, run.error = RunStatus.FAILED, outcome.error or outcome.final_text
        elif outcome.reason == "interrupted":
            run.status = RunStatus.STOPPED
        else:
            run.status = RunStatus.COMPLETED

    def _evict(self) -> None:
        if len(self._runs) <= self._keep:
            return
        for run_id in [rid for rid, run in self._runs.items() if run.status.finished]:
            if len(self._runs) <= self._keep:
                break
            del self._runs[run_id]
