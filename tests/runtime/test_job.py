"""Jobs: one-shot members of the tree that hand their value to whoever ran them."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from actors import Actor, ActorError, ActorFailed, InterruptScope, Job, JobStopped, NoReply
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


class Waiter(Job[list[Any]]):
    """Runs Counting children and lists what each returned; passes an interrupt down to them."""

    kind = "waiter"
    waits_for_children = True

    def __init__(self, count: int = 1, *, in_scope: bool = False) -> None:
        super().__init__()
        self.count = count
        self.in_scope = in_scope
        self.scope: InterruptScope | None = None
        self._got: list[Any] = []

    async def execute(self) -> list[Any]:
        if not self.in_scope:
            await self._run_children()
            return self._got
        with self.interrupt_scope() as scope:
            self.scope = scope
            await self._run_children()
        self._got.append("after the scope" if scope.cancelled_caught else "scope not cancelled")
        return self._got

    async def _run_children(self) -> None:
        async with trio.open_nursery() as nursery:
            for index in range(self.count):
                nursery.start_soon(self._one, index)
        self._got.append("children returned")
        await trio.sleep_forever()

    async def _one(self, index: int) -> None:
        try:
            self._got.append(await self.run_job(Counting(), f"count:{index}"))
        except JobStopped as exc:
            self._got.append(f"not started: {exc}")

    async def interrupted(self) -> list[Any]:
        return [*self._got, "interrupted"]


class TestInterruptPassesDown:
    """An interrupt reaches a job's running child jobs first: their values come back, then its work ends."""

    async def test_children_return_their_values_to_the_interrupted_job(self, system) -> None:
        """Interrupting a job that waits for its children hands each child's interrupted value to the
        job's own code, then cancels the job's work, which returns its interrupted value."""
        runner = await _runner(system)
        answers: list[Any] = []
        async with trio.open_nursery() as nursery:
            nursery.start_soon(lambda: _ask_into(runner, (Waiter(2), "wait"), answers))
            await trio.testing.wait_all_tasks_blocked()
            system.lookup("runner/wait").stop("enough", requested_by="test")
        assert answers == [[[0, 1, 2], [0, 1, 2], "children returned", "interrupted"]]

    async def test_a_job_interrupted_from_its_parent_knows_it(self, system) -> None:
        """A child interrupted through its parent says so; one interrupted alone does not."""
        runner = await _runner(system)
        waiter = Waiter(1)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(runner.ask, (waiter, "wait"))
            await trio.testing.wait_all_tasks_blocked()
            child = next(member for member in waiter.children() if member.name == "count:0")
            waiter.request_stop("enough", requested_by="test")
        assert isinstance(child, Job) and child.interrupted_by_parent and child.interrupt_requested
        alone = Counting()
        alone.request_stop("just this one", requested_by="test")
        assert await runner.ask((alone, "alone")) == [0]
        assert alone.interrupt_requested and not alone.interrupted_by_parent

    async def test_an_interrupt_scope_ends_only_its_part(self, system) -> None:
        """Interrupting a job's own InterruptScope (a turn's budget) brings the children's values back,
        then ends the work inside the scope alone: the job goes on after it and returns normally."""
        runner = await _runner(system)
        answers: list[Any] = []
        waiter = Waiter(1, in_scope=True)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(lambda: _ask_into(runner, (waiter, "wait"), answers))
            await trio.testing.wait_all_tasks_blocked()
            assert waiter.scope is not None
            waiter.scope.interrupt("budget")
        assert answers == [[[0, 1, 2], "children returned", "after the scope"]]
        assert not waiter.interrupt_requested

    async def test_no_child_starts_while_an_interrupt_waits(self, system) -> None:
        """While an interrupt waits for running children, run_job starts no new one: JobStopped."""
        runner = await _runner(system)
        waiter = Waiter(1)
        got: list[Any] = []

        async def late_child() -> None:
            try:
                got.append(await waiter.run_job(Counting(), "late"))
            except JobStopped as exc:
                got.append(str(exc))

        with trio.fail_after(5):  # a late child that started would count for ever
            async with trio.open_nursery() as nursery:
                nursery.start_soon(runner.ask, (waiter, "wait"))
                await trio.testing.wait_all_tasks_blocked()
                child = next(member for member in waiter.children() if member.name == "count:0")
                assert isinstance(child, Job)
                # The child is interrupted but has not returned yet: the waiter's interrupt still waits for it.
                waiter.request_stop("enough", requested_by="test")
                await late_child()
        assert got == ["runner/wait/late: not started: enough (requested by test)"]


class Quick(Job[int]):
    """Starts no tasks: returns at once, or (``helper``) tries to start a helper task."""

    kind = "quick"
    starts_tasks = False

    def __init__(self, *, helper: bool = False) -> None:
        super().__init__()
        self.helper = helper

    async def execute(self) -> int:
        if self.helper:
            self.start_soon(trio.sleep_forever)
        return 5


class QuickCounting(Counting):
    """Counting, in its cancel scope alone."""

    starts_tasks = False


class ChildRunner(Job[int]):
    """Starts no tasks, but runs a child job (in its own task)."""

    kind = "child-runner"
    starts_tasks = False

    async def execute(self) -> int:
        return await self.run_job(Quick(), "quick") + 1


class TestJobsThatStartNoTasks:
    """A job whose class says ``starts_tasks = False`` runs in its cancel scope alone, and is a job as any other."""

    async def test_returns_without_a_schedule_point(self, system) -> None:
        """Its end is no pass through the scheduler (a nursery's exit is one, even with no task in it)."""
        runner = await _runner(system)

        class Timed(Actor[Any]):
            async def handle(self, message: Any) -> int:
                with trio.testing.assert_no_checkpoints():
                    return await self.run_job(ChildRunner(), "runs")

        timed = await system.root.start_child(ChildSpec("timed", Timed))
        assert await timed.ask("go") == 6
        assert await runner.ask((Quick(), "quick")) == 5

    async def test_refuses_helper_tasks(self, system) -> None:
        """start_soon in such a job fails it with ActorError, which reaches its caller; the caller lives on."""
        runner = await _runner(system)

        class Asking(Actor[Any]):
            async def handle(self, message: Any) -> str:
                try:
                    await self.run_job(Quick(helper=True), "quick")
                except ActorError as exc:
                    return str(exc)
                return "no error"

        asking = await system.root.start_child(ChildSpec("asking", Asking))
        assert "starts no helper tasks" in await asking.ask("go")
        assert await runner.ask((Quick(), "quick")) == 5

    async def test_interrupt_and_parent_stop(self, system) -> None:
        """Interrupted, it returns its interrupted() value; its parent stopping cancels it, and it leaves the tree."""
        runner = await _runner(system)
        answers: list[Any] = []
        async with trio.open_nursery() as nursery:
            nursery.start_soon(lambda: _ask_into(runner, (QuickCounting(), "count"), answers))
            await trio.testing.wait_all_tasks_blocked()
            system.lookup("runner/count").stop("enough", requested_by="test")
        assert answers == [[0, 1, 2]]
        job = QuickCounting()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_ask_ignoring_no_reply, runner, (job, "count"))
            await trio.testing.wait_all_tasks_blocked()
            runner.stop("parent goes", requested_by="test")
            await runner.wait_stopped()
        assert "runner/count" not in system.registry
        assert job.state is ActorState.STOPPED
