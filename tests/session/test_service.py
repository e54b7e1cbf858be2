"""The sessions supervisor: create, wake from the store, hibernate, cap running turns."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from actors import MailboxClosed
from actors.session.options import SessionOptions
from actors.session.service import SessionNotFound, SessionService, SessionsSupervisor, TooManyRunningTurns
from config.daemon import DaemonConfig
from messages.events import TurnFinished
from messages.session import Subscribe
from supervisor import ChildSpec
from tests.session.harness import Harness, collect_turn, open_harness
from tests.steps import counted_steps


async def start_service(h: Harness, **daemon: object) -> SessionService:
    config = DaemonConfig(**daemon)
    await h.system.root.start_child(ChildSpec("sessions", lambda: SessionsSupervisor(config.hibernate_after_seconds)))
    return SessionService(h.deps, h.system.registry, config)


async def subscribed_turn(h: Harness, service: SessionService, sid: str, text: str, answer: str) -> tuple[Any, TurnFinished]:
    """Subscribe to session ``sid`` (waking it if needed), run one turn the provider answers with ``answer``."""
    sub = await (await service.get(sid)).ask(Subscribe("t"))
    h.provider.push({"text": answer})
    await service.send(sid, text)
    finished, _ = await collect_turn(sub)
    return sub, finished


def options(h: Harness) -> SessionOptions:
    return SessionOptions(cwd=str(h.workdir), model="scripted-model", provider="custom", base_url=h.provider.base_url)


class TestSessionService:
    """What the daemon's front doors call."""

    async def test_hibernate_and_wake(self, tmp_path: Path) -> None:
        """An idle session without subscribers leaves memory and comes back with its history."""
        async with open_harness(tmp_path) as h:
            service = await start_service(h, hibernate_after_seconds=0.3)
            sid = await service.create_session(options(h))
            sub, finished = await subscribed_turn(h, service, sid, "a number please", "remember 42")
            assert finished.final_text == "remember 42"
            sub.close()
            sessions = h.system.lookup("sessions")
            # Whoever sees the session gone sees it counted: the count moves before it leaves.
            with trio.fail_after(10):
                while service.live(sid) is not None:
                    await trio.sleep(0.05)
            assert sessions.statistics().details["hibernated"] == 1
            woken = await service.get(sid)
            sub = await woken.ask(Subscribe("t", since=finished.seq))
            h.provider.push({"text": "it was 42"})
            await service.send(sid, "what was it?")
            finished2, _ = await collect_turn(sub)
            assert finished2.final_text == "it was 42"
            assert finished2.seq > finished.seq, "event numbering continues across hibernation"
            sent = h.provider.requests[-1].body
            assert "remember 42" in str(sent["messages"])

    @pytest.mark.parametrize("run", range(4))
    async def test_a_subscription_racing_the_sweep_gets_a_live_session(self, tmp_path: Path, run: int) -> None:
        """The sweep decided to hibernate an idle session just as a client that had found it subscribes.
        Whichever the session hears first (Trio's scheduler varies the order), the client's subscription
        is live: the session stays for it, or, already leaving, is woken anew for it."""
        async with open_harness(tmp_path) as h:
            service = await start_service(h, hibernate_after_seconds=600)
            sid = await service.create_session(h.options())
            supervisor = h.system.lookup("sessions")._actor
            session = h.system.lookup(f"sessions/session:{sid}")._actor
            subscriptions = []

            async def subscribe() -> None:
                subscriptions.append(await service.ask(sid, Subscribe("late")))

            async with trio.open_nursery() as nursery:
                nursery.start_soon(supervisor._hibernate, session)
                nursery.start_soon(subscribe)
            h.provider.push({"text": "still here"})
            await service.send(sid, "are you there?")
            finished, _ = await collect_turn(subscriptions[0])
            assert finished.final_text == "still here"

    async def test_a_passive_subscriber_lets_it_sleep(self, tmp_path: Path) -> None:
        """A platform's chat follower subscribes passively: the session hibernates with it subscribed,
        which ends the follower's subscription."""
        async with open_harness(tmp_path) as h:
            service = await start_service(h, hibernate_after_seconds=0.3)
            sid = await service.create_session(options(h))
            follower = await (await service.get(sid)).ask(Subscribe("telegram/1", passive=True))
            with trio.fail_after(10):
                while service.live(sid) is not None:
                    await trio.sleep(0.05)
            with trio.fail_after(1):
                async for _ in follower:
                    pass  # drained: the hibernating session ended it
            assert follower.closed

    async def test_looked_up_while_hibernating(self, tmp_path: Path) -> None:
        """A lookup while the session is going to the store waits and wakes it, never a closing handle."""
        async with open_harness(tmp_path) as h:
            service = await start_service(h, hibernate_after_seconds=0.3)
            sid = await service.create_session(options(h))
            supervisor = h.system.lookup("sessions")._actor
            with trio.fail_after(10):
                while sid not in supervisor.hibernating:
                    await trio.sleep(0)
            _, finished = await subscribed_turn(h, service, sid, "still there?", "back")
            assert finished.final_text == "back"

    async def test_unknown_session(self, tmp_path: Path) -> None:
        """Asking for a session that never existed is a clear error."""
        async with open_harness(tmp_path) as h:
            service = await start_service(h)
            with pytest.raises(SessionNotFound, match="nope"):
                await service.get("nope")

    async def test_running_turn_cap(self, tmp_path: Path) -> None:
        """Beyond daemon.max_running_turns a new turn is refused with a busy error; the session whose turn runs
        may still queue a message, and once its turns are put away another session's turn is admitted."""
        async with open_harness(tmp_path) as h:
            service = await start_service(h, max_running_turns=1)
            first = await service.create_session(options(h))
            second = await service.create_session(options(h))
            sub = await (await service.get(first)).ask(Subscribe("t"))
            h.provider.push({"text": "slow", "delay_first_byte": 1.0})
            h.provider.push({"text": "queued"})
            await service.send(first, "go")
            with trio.fail_after(5):
                while await service.running_turns() == 0:
                    await trio.sleep(0.01)
            with pytest.raises(TooManyRunningTurns, match="busy"):
                await service.send(second, "me too")
            await service.send(first, "and then", busy_mode="queue")
            for _ in range(2):
                finished, _ = await collect_turn(sub)
                assert isinstance(finished, TurnFinished) and finished.reason == "completed"
            h.provider.push({"text": "now"})
            await service.send(second, "my turn")

    async def test_a_message_below_the_cap_looks_at_no_session(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Admitting a turn under the cap reads the supervisor's running count: no walk over every session."""
        async with open_harness(tmp_path) as h:
            service = await start_service(h)
            sids = [await service.create_session(options(h)) for _ in range(3)]
            walks: list[int] = []
            children = SessionsSupervisor.children
            monkeypatch.setattr(SessionsSupervisor, "children", lambda self: walks.append(1) or children(self))
            for sid in sids:
                _, finished = await subscribed_turn(h, service, sid, "hi", "hello")
                assert finished.reason == "completed"
            assert walks == []

    async def test_close_interrupts_the_turn_then_stops(self, tmp_path: Path) -> None:
        """Closing a session mid-turn ends the turn as interrupted for its subscribers, then stops it for good."""
        async with open_harness(tmp_path) as h:
            service = await start_service(h)
            sid = await service.create_session(options(h))
            sub = await (await service.get(sid)).ask(Subscribe("t"))
            h.provider.push({"text": "never finished", "delay_first_byte": 30})
            await service.send(sid, "go")
            with trio.fail_after(5):
                while await service.running_turns() == 0:
                    await trio.sleep(0.01)
            await service.close_session(sid, "closed by test")
            finished, _ = await collect_turn(sub)
            assert finished.reason == "interrupted"
            assert service.live(sid) is None
            assert await service.running_turns() == 0
            assert sid not in await service.live_ids()
            assert [c.name for c in await h.system.lookup("sessions").which_children()] == []
            assert (await h.deps.store.get_session(sid)).end_reason == "closed by test"


class TestSessionsHandle:
    """What the sessions supervisor says of its sessions is asked of it, never read from it."""

    async def test_answers_come_through_the_mailbox(self, tmp_path: Path) -> None:
        """The handle's live ids, sessions in turns and hibernation are the supervisor's replies: once the
        supervisor has stopped, the handle says its mailbox is closed instead of reading a dead actor's children."""
        async with open_harness(tmp_path) as h:
            service = await start_service(h, hibernate_after_seconds=600)
            sid = await service.create_session(h.options())
            handle = h.system.lookup("sessions")
            assert await handle.live_ids() == frozenset({sid})
            assert await handle.sessions_in_turns() == frozenset()
            assert not await handle.hibernating(sid)
            await h.system.root.terminate_child("sessions", "test over")
            with pytest.raises(MailboxClosed):
                await handle.live_ids()
            assert await service.live_ids() == frozenset(), "no sessions supervisor: none live"

    async def test_a_session_quiet_before_the_set_look_does_not_wake_the_sweep(
        self, tmp_path: Path, mock_clock: trio.testing.MockClock
    ) -> None:
        """A session that goes quiet while the sweep's next full look is already set leaves the sweep asleep
        (each API completion's session stirs several times), and is still hibernated when its own idle time is up."""
        async with open_harness(tmp_path) as h:
            service = await start_service(h, hibernate_after_seconds=10)
            first = await service.create_session(h.options())
            supervisor = h.system.lookup("sessions")._actor
            await trio.testing.wait_all_tasks_blocked()  # the sweep has looked at it and sleeps
            mock_clock.jump(4)
            with counted_steps(lambda task: task.name.endswith("._hibernate_loop")) as steps:
                second = await service.create_session(h.options())
                await trio.testing.wait_all_tasks_blocked()
            idle_since = h.system.lookup(f"sessions/session:{second}")._actor.last_active
            assert steps.count == 0, "the sweep was woken though its full look was set"
            mock_clock.autojump_threshold = 0
            with trio.fail_after(60):
                await wait_until_gone(service, first)
                await wait_until_gone(service, second)
                gone = trio.current_time()
            mock_clock.autojump_threshold = math.inf
            assert gone - idle_since == pytest.approx(10, abs=0.05)


async def wait_until_gone(service: SessionService, sid: str) -> None:
    """Return once the session is no longer live here, looked for every 10 ms."""
    while service.is_live(sid):
        await trio.sleep(0.01)


async def hibernation_started(supervisor: SessionsSupervisor) -> float:
    """The (virtual) moment the sweep starts a hibernation (it counts one as it starts), looked for every 10 ms."""
    while supervisor.hibernated == 0:
        await trio.sleep(0.01)
    return trio.current_time()


class TestHibernationDeadline:
    """The sweep sleeps until a session is due or says it may have become quiet: it never ticks."""

    async def test_an_idle_session_goes_when_its_idle_time_is_up(
        self, tmp_path: Path, mock_clock: trio.testing.MockClock
    ) -> None:
        """An idle session is hibernated at its last activity plus hibernate_after, not at the next tick after it."""
        async with open_harness(tmp_path) as h:
            service = await start_service(h, hibernate_after_seconds=6.3)
            sid = await service.create_session(h.options())
            supervisor = h.system.lookup("sessions")._actor
            session = h.system.lookup(f"sessions/session:{sid}")._actor
            idle_since = session.last_active
            mock_clock.autojump_threshold = 0  # set up on a still clock; from here on time jumps
            with trio.fail_after(60):
                started = await hibernation_started(supervisor)
            mock_clock.autojump_threshold = math.inf  # the session's stop and the teardown on a still clock again
            assert started - idle_since == pytest.approx(6.3, abs=0.015)

    async def test_a_one_shot_session_goes_as_its_watcher_leaves(
        self, tmp_path: Path, mock_clock: trio.testing.MockClock
    ) -> None:
        """A one-shot session whose turn is over is hibernated the moment its last watcher detaches."""
        async with open_harness(tmp_path) as h:
            service = await start_service(h, hibernate_after_seconds=600)
            sid = await service.create_session(h.options(one_shot=True))
            supervisor = h.system.lookup("sessions")._actor
            sub, finished = await subscribed_turn(h, service, sid, "once", "done")
            assert finished.final_text == "done" and service.is_live(sid)
            mock_clock.autojump_threshold = 0
            left = trio.current_time()
            sub.close()
            with trio.fail_after(60):
                started = await hibernation_started(supervisor)
            mock_clock.autojump_threshold = math.inf
            assert started - left < 0.015
