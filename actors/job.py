"""Jobs: one-shot members of the tree that return a value to whoever ran them.

A job is what an actor used to be when it was started only to read a result
off it afterwards: a provider call, one tool call, a turn. Its parent runs it
with :meth:`~actors.base.ActorBase.run_job`, and the job has one way out:

- :meth:`Job.execute` returns: ``run_job`` returns that value;
- :meth:`Job.execute` raises: ``run_job`` raises that same exception (not
  boxed: the caller catches what the job's code raises);
- the job is interrupted (:meth:`Job.request_stop`: ``kill PATH``, or its
  parent calling it): the job's own interrupt scope cancels ``execute`` and
  :meth:`Job.interrupted` gives the value instead, built from what the job got
  so far (by default there is none: ``run_job`` raises
  :class:`~actors.errors.JobStopped`).

A cancellation from above (the caller's scope, a deadline around ``run_job``)
is not an interrupt: it propagates as ``Cancelled``, and the job returns nothing.

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

from typing import Generic, TypeVar

import outcome
import trio

from actors.base import ActorBase
from actors.errors import JobStopped
from messages.supervision import ActorState

__all__ = ["Job"]

T = TypeVar("T")


class Job(ActorBase, Generic[T]):
    """A member of the tree that runs :meth:`execute` once and returns its value."""

    kind = "job"

    __slots__ = ()

    # What the job ended with, for run_job (kept in the instance's __dict__). None: no value (cancelled).
    _ended: outcome.Outcome[T] | None
    # Cancelled by request_stop: it ends execute(), never the job, which then returns interrupted().
    _interrupt: trio.CancelScope

    def __init__(self) -> None:
        super().__init__()
        self._interrupt = trio.CancelScope()

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
        """True once :meth:`request_stop` was called."""
        return self._interrupt.cancel_called

    def request_stop(self, reason: str, *, requested_by: str = "operator") -> None:
        """Interrupt the job: :meth:`execute` is cancelled and the job returns :meth:`interrupted`."""
        self.cancel_reason = f"{reason} (requested by {requested_by})"
        if self.state not in (ActorState.STOPPED, ActorState.FAILED):
            self.state = ActorState.STOPPING
        self._interrupt.cancel(reason=self.cancel_reason)

    async def main(self) -> None:
        """Run :meth:`execute` in the interrupt scope and keep how it ended for ``run_job`` (the runtime's)."""
        with self._interrupt:
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
