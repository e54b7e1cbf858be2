"""Jobs: one-shot members of the tree that return a value to whoever ran them.

A job is what an actor used to be when it was started only to read a result
off it afterwards: a provider call, one tool call, a turn. Its parent runs it
with :meth:`~actors.base.ActorBase.run_job`, and the job has one way out:

- :meth:`Job.execute` returns: ``run_job`` returns that value;
- :meth:`Job.execute` raises: ``run_job`` raises that same exception (not
  boxed: the caller catches what the job's code raises);
- the job is interrupted (:meth:`Job.request_stop`: ``kill PATH``, or its
  parent's interrupt): the job's own interrupt scope cancels ``execute`` and
  :meth:`Job.interrupted` gives the value instead, built from what the job got
  so far (by default there is none: ``run_job`` raises
  :class:`~actors.errors.JobStopped`).

An interrupt reaches the jobs beneath: a job that :attr:`~Job.waits_for_children`
(a turn, a tool call) passes it on to the jobs it is running, each of which
returns what it got to the job's own code, and its scope (or the
:class:`InterruptScope` the children run in) is cancelled once none of them is
running; any other job's scope is cancelled at once. A cancellation from above
(the caller's scope, a deadline around ``run_job``) is not an interrupt: it
propagates as ``Cancelled``, and the job returns nothing. (See
``docs/DECISIONS.md#d-job-results``.)

Nobody reads attributes off a job, running or finished, and no parent writes
into one: what the parent needs is the value; what the user should see while
the job runs goes out as events. While it runs, the job is in the tree like any
actor: its state and activity show in ``tree``, its snapshot in ``inspect``.

Writing a job::

    class Fetch(Job[bytes]):
        kind = "fetch"

        async def execute(self) -> bytes:
            self.activity = "downloading"
            async for chunk in stream():
                self._got += chunk
            return self._got

        async def interrupted(self) -> bytes:
            return self._got  # stopped half-way: what arrived so far
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, ClassVar, Generic, TypeVar

import outcome
import trio

from actors.base import ActorBase
from actors.errors import JobStopped
from messages.paths import child_path
from messages.supervision import ActorState

__all__ = ["InterruptScope", "Job"]

T = TypeVar("T")
U = TypeVar("U")


class InterruptScope:
    """A cancel scope that is interrupted rather than cancelled (see the module's docstring).

    Interrupted while jobs run in it for a job that :attr:`~Job.waits_for_children`, it
    interrupts them and is cancelled once the last has returned its value; otherwise at once.
    """

    __slots__ = ("_jobs", "_scope", "_waits", "reason")

    def __init__(self, *, waits_for_children: bool) -> None:
        self._scope = trio.CancelScope()
        self._waits = waits_for_children
        # Invariant: the jobs running in this scope now (only counted when it waits for them).
        self._jobs: list[Job[Any]] = []
        self.reason: str | None = None

    @property
    def cancelled_caught(self) -> bool:
        """True once the scope's cancel ended the work inside it."""
        return self._scope.cancelled_caught

    def interrupt(self, reason: str) -> None:
        """End the work in this scope: its running jobs first (they return what they got), then the rest."""
        if self.reason is not None:
            return
        self.reason = reason
        if not self._jobs:
            self._scope.cancel(reason=reason)
            return
        for job in list(self._jobs):
            job._interrupt_from_parent(reason)

    def _job_started(self, job: Job[Any]) -> None:
        if self._waits:
            self._jobs.append(job)

    def _job_returned(self, job: Job[Any]) -> None:
        if not self._waits:
            return
        self._jobs.remove(job)
        if self.reason is not None and not self._jobs:
            self._scope.cancel(reason=self.reason)


class Job(ActorBase, Generic[T]):
    """A member of the tree that runs :meth:`execute` once and returns its value."""

    kind = "job"
    #: Pass an interrupt on to the running child jobs and let their values come back before
    #: the job's own work is cancelled (else the interrupt cancels it, children included, at once).
    waits_for_children: ClassVar[bool] = False

    __slots__ = ()

    # What the job ended with, for run_job (kept in the instance's __dict__). None: no value (cancelled).
    _ended: outcome.Outcome[T] | None
    # Interrupted by request_stop: it ends execute(), never the job, which then returns interrupted().
    _interrupt: InterruptScope
    # The interrupt scopes open now, outermost first: the job's own, then those execute() opened.
    _open_scopes: list[InterruptScope]
    #: True when the interrupt came from the job's parent (its own interrupt), not to this job alone.
    interrupted_by_parent: bool

    def __init__(self) -> None:
        super().__init__()
        self._interrupt = InterruptScope(waits_for_children=self.waits_for_children)
        self._open_scopes = [self._interrupt]
        self.interrupted_by_parent = False

    async def execute(self) -> T:
        """The job's work; its return value (or exception) is what ``run_job`` returns (or raises)."""
        raise NotImplementedError(f"{type(self).__name__} has no execute()")

    async def interrupted(self) -> T:
        """The job's value when it was interrupted before :meth:`execute` returned: what it got so far.

        Runs after ``execute`` was cancelled, outside the interrupt scope.

        Raises:
            JobStopped: by default, a job interrupted has no value.
        """
        raise JobStopped(self.path, self.cancel_reason or "stopped before it finished")

    @property
    def interrupt_requested(self) -> bool:
        """True once the job was interrupted (by request or by its parent)."""
        return self._interrupt.reason is not None

    def request_stop(self, reason: str, *, requested_by: str = "operator") -> None:
        """Interrupt the job: :meth:`execute` is cancelled and the job returns :meth:`interrupted`."""
        self.cancel_reason = f"{reason} (requested by {requested_by})"
        if self.state not in (ActorState.STOPPED, ActorState.FAILED):
            self.state = ActorState.STOPPING
        self._interrupt.interrupt(self.cancel_reason)

    def _interrupt_from_parent(self, reason: str) -> None:
        self.interrupted_by_parent = True
        self._interrupt.interrupt(reason)

    @contextmanager
    def interrupt_scope(self) -> Iterator[InterruptScope]:
        """Open an :class:`InterruptScope` of the job's own inside :meth:`execute` (a turn's budget):
        interrupting it ends the work inside it, as the job's own interrupt ends ``execute``."""
        scope = InterruptScope(waits_for_children=self.waits_for_children)
        self._open_scopes.append(scope)
        try:
            with scope._scope:
                yield scope
        finally:
            self._open_scopes.remove(scope)

    async def run_job(self, job: Job[U], name: str) -> U:
        """Run a child job as :meth:`ActorBase.run_job` does; an interrupt of the scopes it runs in reaches it.

        Raises:
            JobStopped: a scope it would run in is being interrupted: the job is not started.
            Exception: whatever the job raised, as itself.
        """
        scopes = list(self._open_scopes)
        for scope in scopes:
            if scope.reason is not None:
                raise JobStopped(child_path(self.path, name), f"not started: {scope.reason}")
        for scope in scopes:
            scope._job_started(job)
        try:
            return await super().run_job(job, name)
        finally:
            for scope in scopes:
                scope._job_returned(job)

    async def main(self) -> None:
        """Run :meth:`execute` in the interrupt scope and keep how it ended for ``run_job`` (the runtime's)."""
        with self._interrupt._scope:
            try:
                self._ended = outcome.Value(await self.execute())
            except Exception as exc:
                self._failed(exc)
                return
        if self._interrupt.cancelled_caught:
            try:
                self._ended = outcome.Value(await self.interrupted())
            except JobStopped as exc:
                self._ended = outcome.Error(exc)  # stopped, not failed
            except Exception as exc:
                self._failed(exc)

    def _failed(self, exc: Exception) -> None:
        # Kept for the caller as itself; recorded and logged here: the job failed.
        self._record_exit(exc)
        self._ended = outcome.Error(exc)

    async def _run_to_value(self) -> T:
        self._ended = None
        await self.run()
        # run() returned, so main() did: it set the outcome (a cancel from above raises out of run()).
        assert self._ended is not None
        return self._ended.unwrap()
