"""Jobs: one-shot members of the tree that return a value to whoever ran them.

A job is what an actor used to be when it was started only to read a result
off it afterwards: a provider call, one tool call, a turn. Its parent runs it
with :meth:`~actors.base.ActorBase.run_job` and gets the value back (or
:class:`~actors.errors.ActorFailed`); nobody reads attributes off a finished
job, and no parent writes into one. While it runs, the job is in the tree like
any actor: its state and activity show in ``tree``, its snapshot in
``inspect``, and ``kill PATH`` stops it.

Writing a job::

    class Fetch(Job[bytes]):
        kind = "fetch"

        async def execute(self) -> bytes:
            self.activity = "downloading"
            return await download()
"""

from __future__ import annotations

from typing import Generic, TypeVar

from actors.base import ActorBase
from actors.errors import JobStopped

__all__ = ["Job"]

T = TypeVar("T")


class Job(ActorBase, Generic[T]):
    """A member of the tree that runs :meth:`execute` once and returns its value."""

    kind = "job"

    __slots__ = ()

    # The finished job's value, boxed so that None is a value (kept in the instance's __dict__).
    _value: tuple[T] | None

    async def execute(self) -> T:
        """The job's work; its return value is what ``run_job`` returns."""
        raise NotImplementedError(f"{type(self).__name__} has no execute()")

    async def main(self) -> None:
        """Run :meth:`execute` and keep its value for :meth:`_run_to_value` (the runtime's, never a caller's)."""
        self._value = (await self.execute(),)

    async def _run_to_value(self) -> T:
        self._value = None
        await self.run()
        if self._value is None:
            # The job's own scope was cancelled (a kill by path): it has no value.
            raise JobStopped(self.path, self.cancel_reason or "stopped before it finished")
        return self._value[0]
