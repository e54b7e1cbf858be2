"""Supervision: restart types and strategies, intensity, ordered shutdown."""

from __future__ import annotations

import logging
from functools import partial

import pytest
import trio

from actors.errors import ActorError, ActorFailed, RestartIntensityExceeded, SpawnFailed
from messages.supervision import ActorState
from supervisor import open_actor_system
from supervisor import ChildSpec, RestartType, Strategy
from tests.runtime.actors_for_tests import Crash, FailsOnStart, Finish, Stubborn, Worker


def spec(journal: list[str], name: str, restart: RestartType = RestartType.PERMANENT, timeout: float = 5.0) -> ChildSpec:
    return ChildSpec(name, partial(Worker, journal, name), restart, timeout)


async def crash(system, path: str) -> None:
    with pytest.raises(ActorFailed):
        await system.lookup(path).ask(Crash())
    await trio.testing.wait_all_tasks_blocked()


class TestRestartTypes:
    """Which exits bring a child back."""

    async def test_permanent_child_restarts_after_crash(self, autojump_clock: trio.testing.MockClock) -> None:
        """A permanent child that crashes is replaced by a fresh instance."""
        journal: list[str] = []
        async with open_actor_system([spec(journal, "a")]) as system:
            first = system.lookup("a")
            await crash(system, "a")
            second = system.lookup("a")
            assert second is not first
            assert second.statistics().restarts == 1
            assert second.statistics().last_error.type == "ValueError"
            assert await second.ask(4) == 8

    async def test_permanent_child_restarts_after_normal_exit(self, autojump_clock: trio.testing.MockClock) -> None:
        """A permanent child comes back even when it ends normally."""
        journal: list[str] = []
        async with open_actor_system([spec(journal, "a")]) as system:
            await system.lookup("a").ask(Finish())
            await trio.testing.wait_all_tasks_blocked()
            assert journal.count("start a") == 2

    async def test_transient_child_not_restarted_after_normal_exit(self, autojump_clock: trio.testing.MockClock) -> None:
        """A transient child that finishes normally is gone for good."""
        journal: list[str] = []
        async with open_actor_system([spec(journal, "t", RestartType.TRANSIENT)]) as system:
            await system.lookup("t").ask(Finish())
            await trio.testing.wait_all_tasks_blocked()
            assert "t" not in system.registry
            assert journal == ["start t", "stop t"]

    async def test_transient_child_restarted_after_crash(self, autojump_clock: trio.testing.MockClock) -> None:
        """A transient child that fails is restarted."""
        journal: list[str] = []
        async with open_actor_system([spec(journal, "t", RestartType.TRANSIENT)]) as system:
            await crash(system, "t")
            assert system.lookup("t").statistics().restarts == 1

    async def test_temporary_child_never_restarted(self, autojump_clock: trio.testing.MockClock) -> None:
        """A temporary child that crashes is dropped."""
        journal: list[str] = []
        async with open_actor_system([spec(journal, "tmp", RestartType.TEMPORARY)]) as system:
            await crash(system, "tmp")
            assert "tmp" not in system.registry

    async def test_temporary_sibling_dropped_when_one_for_all_restarts(self, autojump_clock: trio.testing.MockClock) -> None:
        """Under one_for_all, a sibling's crash stops a temporary child and does not bring it back."""
        journal: list[str] = []
        specs = [spec(journal, "a"), spec(journal, "tmp", RestartType.TEMPORARY), spec(journal, "c")]
        async with open_actor_system(specs, strategy=Strategy.ONE_FOR_ALL) as system:
            await crash(system, "a")
            assert "tmp" not in system.registry
            assert {"a", "c"} <= set(system.registry.paths())
            assert journal.count("start c") == 2


class TestStrategies:
    """Which siblings restart with a failed child."""

    async def test_one_for_one_restarts_only_the_failed_child(self, autojump_clock: trio.testing.MockClock) -> None:
        """Siblings are untouched."""
        journal: list[str] = []
        async with open_actor_system([spec(journal, n) for n in "abc"]) as system:
            before = {n: system.lookup(n) for n in "abc"}
            await crash(system, "b")
            assert system.lookup("a") is before["a"] and system.lookup("c") is before["c"]
            assert system.lookup("b") is not before["b"]

    async def test_one_for_all_restarts_everyone_in_order(self, autojump_clock: trio.testing.MockClock) -> None:
        """Siblings stop in reverse order and all start again in order."""
        journal: list[str] = []
        async with open_actor_system([spec(journal, n) for n in "abc"], strategy=Strategy.ONE_FOR_ALL) as system:
            journal.clear()
            await crash(system, "b")
            assert journal == ["stop b", "stop c", "stop a", "start a", "start b", "start c"]

    async def test_rest_for_one_restarts_later_siblings(self, autojump_clock: trio.testing.MockClock) -> None:
        """Children started after the failed one restart; earlier ones do not."""
        journal: list[str] = []
        async with open_actor_system([spec(journal, n) for n in "abc"], strategy=Strategy.REST_FOR_ONE) as system:
            first_a = system.lookup("a")
            journal.clear()
            await crash(system, "b")
            assert journal == ["stop b", "stop c", "start b", "start c"]
            assert system.lookup("a") is first_a


class TestIntensity:
    """Too many restarts make the supervisor give up."""

    async def test_exceeding_intensity_escalates(self, autojump_clock: trio.testing.MockClock) -> None:
        """The fourth crash within the period fails the root with RestartIntensityExceeded."""
        journal: list[str] = []
        with pytest.raises(BaseExceptionGroup) as caught:
            async with open_actor_system([spec(journal, "a"), spec(journal, "b")], max_restarts=3, period=5) as system:
                for _ in range(4):
                    await crash(system, "a")
                await trio.sleep_forever()
        failure = caught.value.exceptions[0]
        assert isinstance(failure, ActorFailed)
        assert isinstance(failure.__cause__, RestartIntensityExceeded)
        # The escalating supervisor stopped the surviving sibling on its way out.
        assert journal[-1] == "stop b"

    async def test_restarts_spread_over_time_are_tolerated(self, autojump_clock: trio.testing.MockClock) -> None:
        """Crashes further apart than the period never add up."""
        journal: list[str] = []
        async with open_actor_system([spec(journal, "a")], max_restarts=1, period=5) as system:
            for _ in range(5):
                await crash(system, "a")
                await trio.sleep(6)
            assert system.lookup("a").statistics().restarts == 5


class TestShutdown:
    """Stopping is ordered, bounded and explained."""

    async def test_children_stop_in_reverse_order(self, autojump_clock: trio.testing.MockClock) -> None:
        """Leaving the system stops c, b, a."""
        journal: list[str] = []
        async with open_actor_system([spec(journal, n) for n in "abc"]):
            journal.clear()
        assert journal == ["stop c", "stop b", "stop a"]

    async def test_stubborn_child_is_waited_for_its_timeout_only(
        self, autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
    ) -> None:
        """A child ignoring cancellation holds its sibling's stop back only for its shutdown timeout, loudly."""
        journal: list[str] = []
        specs = [spec(journal, "a"), ChildSpec("slow", partial(Stubborn, journal, 30.0), shutdown_timeout=2.0)]
        start = trio.current_time()
        with caplog.at_level(logging.ERROR):
            async with open_actor_system(specs) as system:
                slow = system.lookup("slow")
            # "a" was stopped once slow's 2 s timeout ran out, not after its 30 s.
        stops = [entry for entry in journal if not entry.startswith("start")]
        assert stops[0] == "stop a"
        assert "SHUTDOWN TIMEOUT" in caplog.text
        assert system.root.statistics().details["overdue"] == {"slow": "did not stop within its 2s shutdown timeout"}
        assert slow.statistics().activity == "", "the supervisor writes into its own record, not into the child"
        assert journal[-1] == f"stubborn gone at {start + 30:.0f}"

    async def test_cancel_reason_is_visible(self, system) -> None:
        """Stopping an actor records who asked and why in its snapshot."""
        journal: list[str] = []
        handle = await system.root.start_child(spec(journal, "w"))
        handle.stop("operator kill", requested_by="cli")
        assert handle.statistics().cancel_reason == "operator kill (requested by cli)"
        await handle.wait_stopped()
        assert handle.statistics().state is ActorState.STOPPED


class TestRestartVisibility:
    """A restart in progress shows on the supervisor, and the failed instance keeps its own state."""

    async def test_restarting_child_shown_on_supervisor(self, mock_clock: trio.testing.MockClock) -> None:
        """While a crashed child's replacement starts, the supervisor lists it as restarting; the old one says failed."""
        journal: list[str] = []
        async with open_actor_system([ChildSpec("a", partial(SlowRestart, journal, "a"))]) as system:
            first = system.lookup("a")
            with pytest.raises(ActorFailed):
                await first.ask(Crash())
            await trio.testing.wait_all_tasks_blocked()
            assert system.root.statistics().details["restarting"] == ["a"]
            assert first.statistics().state is ActorState.FAILED
            mock_clock.jump(SlowRestart.delay)
            await trio.testing.wait_all_tasks_blocked()
            assert "restarting" not in system.root.statistics().details
            assert system.lookup("a") is not first


class SlowRestart(Worker):
    """A worker whose starts after the first take ``delay`` seconds."""

    delay = 10.0

    async def on_start(self) -> None:
        if f"start {self.label}" in self.journal:
            await trio.sleep(self.delay)
        await super().on_start()


class TestDynamicChildren:
    """Children added and removed at run time, like sessions."""

    async def test_start_and_terminate_child(self, system) -> None:
        """A dynamic child is reachable by path and gone after terminate."""
        journal: list[str] = []
        handle = await system.root.start_child(spec(journal, "session:1", RestartType.TRANSIENT))
        assert await handle.ask(3) == 6
        assert [c.name for c in await system.root.which_children()] == ["session:1"]
        assert await system.root.terminate_child("session:1", "closed") is True
        assert "session:1" not in system.registry
        assert await system.root.terminate_child("session:1", "closed") is False

    async def test_spawn_error_before_ready_raises_in_the_spawner(self, system) -> None:
        """A child failing in on_start makes start_child raise and leaves nothing behind."""
        with pytest.raises(SpawnFailed) as caught:
            await system.root.start_child(ChildSpec("broken", FailsOnStart))
        assert isinstance(caught.value.__cause__, RuntimeError)
        assert "broken" not in system.registry

    async def test_duplicate_name_refused(self, system) -> None:
        """Two children cannot share a name."""
        journal: list[str] = []
        await system.root.start_child(spec(journal, "x"))
        with pytest.raises(ActorError, match="already exists"):
            await system.root.start_child(spec(journal, "x"))


class TestPerChildIntensity:
    """A supervisor of independent children gives up a flapping child alone."""

    async def test_flapping_child_is_dropped_siblings_live(self, autojump_clock: trio.testing.MockClock) -> None:
        """Past the limit the child is removed; the supervisor and the other children keep running."""
        from supervisor import Supervisor

        journal: list[str] = []
        sessions = ChildSpec(
            "sessions",
            lambda: Supervisor([spec(journal, "a"), spec(journal, "b")], max_restarts=2, period=5, per_child_intensity=True),
        )
        async with open_actor_system([sessions]) as system:
            for _ in range(3):
                await crash(system, "sessions/a")
            assert "sessions/a" not in system.registry
            assert await system.lookup("sessions/b").ask(2) == 4
            assert system.lookup("sessions").statistics().state is not ActorState.FAILED
