"""Jobs: one-shot members of the tree that hand their value to whoever ran them."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from actors import Actor, ActorFailed, Job, JobStopped, NoReply
from messages.supervision import ActorState
from supervisor import ChildSpec


class Square(Job[int]):
    """Returns its number squared once ``release`` is set; shows its activity meanwhile."""

    kind = "square"

    def __init__(self, number: int, release: trio.Event) -> None:
        super().__init__()
        self.number = number
        self.release = release

    async def execute(self) -> int:
        self.activity = f"squaring {self.number}"
        await self.release.wait()
        return self.number * self.number


class Broken(Job[int]):
    """Raises instead of returning."""

    kind = "broken"

    def __init__(self) -> None:
        super().__init__()
        self.error = ValueError("no value")

    async def execute(self) -> int:
        raise self.error


class Counting(Job[list[int]]):
    """Counts up until stopped; interrupted, returns the numbers counted so far."""

    kind = "counting"

    def __init__(self) -> None:
        super().__init__()
        self._counted: list[int] = []

    async def execute(self) -> list[int]:
        while True:
            self._counted.append(len(self._counted))
            if len(self._counted) == 3:
                await trio.sleep_forever()
            await trio.lowlevel.checkpoint()

    async def interrupted(self) -> list[int]:
        return self._counted


class Runner(Actor[Any]):
    """Runs a job per ask and answers with the job's value, or the error's type."""

    kind = "runner"

    async def handle(self, message: Any) -> Any:
        job, name = message
        try:
            return await self.run_job(job, name)
        except JobStopped as exc:
            return f"stopped: {exc}"
        except ValueError as exc:
            return exc


async def _runner(system: Any) -> Any:
    return await system.root.start_child(ChildSpec("runner", Runner))


class TestRunJob:
    """run_job returns the value, shows the job in the tree while it runs, and boxes failures."""

    async def test_value_and_tree_presence(self, system) -> None:
        """While running, the job is in the tree under its parent, busy, with its activity; then it is gone."""
        runner = await _runner(system)
        release = trio.Event()
        answers: list[Any] = []
        async with trio.open_nursery() as nursery:
            nursery.start_soon(lambda: _ask_into(runner, (Square(7, release), "sq"), answers))
            await trio.testing.wait_all_tasks_blocked()
            snapshot = system.lookup("runner/sq").statistics()
            assert (snapshot.kind, snapshot.state, snapshot.activity) == ("square", ActorState.BUSY, "squaring 7")
            assert snapshot.mailbox_capacity == 0
            release.set()
        assert answers == [49]
        assert "runner/sq" not in system.registry

    async def test_failure_reaches_the_caller_as_itself(self, system) -> None:
        """A job's exception reaches its caller unwrapped, the very object raised; the job shows
        failed meanwhile, and the caller lives on."""
        runner = await _runner(system)
        job = Broken()
        assert await runner.ask((job, "broken")) is job.error
        assert not isinstance(job.error, ActorFailed) and job.error.__cause__ is None
        assert job.state is ActorState.FAILED and job.last_error is not None
        assert job.last_error.type == "ValueError"
        assert await runner.ask((Square(3, _set()), "sq")) == 9

    async def test_kill_by_path(self, system) -> None:
        """A job with no interrupted value, stopped through its handle, raises JobStopped (the reason
        in it) in its caller."""
        runner = await _runner(system)
        answers: list[Any] = []
        async with trio.open_nursery() as nursery:
            nursery.start_soon(lambda: _ask_into(runner, (Square(2, trio.Event()), "sq"), answers))
            await trio.testing.wait_all_tasks_blocked()
            system.lookup("runner/sq").stop("enough", requested_by="test")
        [answer] = answers
        assert answer.startswith("stopped: runner/sq: enough (requested by test)")

    async def test_interrupted_job_returns_what_it_got(self, system) -> None:
        """Interrupted, a job returns its interrupted() value (what it got so far) to its caller,
        and leaves the tree stopped, not failed."""
        runner = await _runner(system)
        answers: list[Any] = []
        job = Counting()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(lambda: _ask_into(runner, (job, "count"), answers))
            await trio.testing.wait_all_tasks_blocked()
            system.lookup("runner/count").stop("enough", requested_by="test")
        assert answers == [[0, 1, 2]]
        assert job.state is ActorState.STOPPED and job.last_error is None
        assert job.cancel_reason == "enough (requested by test)"

    async def test_interrupt_before_start(self, system) -> None:
        """A job interrupted before it runs still returns its interrupted() value."""
        runner = await _runner(system)
        job = Counting()
        job.request_stop("never mind", requested_by="test")
        assert await runner.ask((job, "count")) == [0]

    async def test_parent_stop_reaches_job(self, system) -> None:
        """Stopping the parent cancels the running job with it; the job leaves the tree."""
        runner = await _runner(system)
        job = Square(2, trio.Event())
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_ask_ignoring_no_reply, runner, (job, "sq"))
            await trio.testing.wait_all_tasks_blocked()
            assert "runner/sq" in system.registry
            runner.stop("parent goes", requested_by="test")
            await runner.wait_stopped()
        assert "runner/sq" not in system.registry
        assert job.state is ActorState.STOPPED

    async def test_job_takes_no_messages(self, system) -> None:
        """A job's handle refuses tell with MailboxClosed: jobs read no mailbox."""
        from actors import MailboxClosed

        runner = await _runner(system)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(runner.ask, (Square(2, release := trio.Event()), "sq"))
            await trio.testing.wait_all_tasks_blocked()
            with pytest.raises(MailboxClosed):
                system.lookup("runner/sq").tell_nowait("hello")
            release.set()


def _set() -> trio.Event:
    event = trio.Event()
    event.set()
    return event


async def _ask_into(handle: Any, message: Any, answers: list[Any]) -> None:
    answers.append(await handle.ask(message))


async def _ask_ignoring_no_reply(handle: Any, message: Any) -> None:
    with pytest.raises(NoReply):
        await handle.ask(message)
