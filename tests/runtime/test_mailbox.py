"""Mailboxes: backpressure, tell_nowait, ask and late replies."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from actors.base import Actor
from actors.errors import MailboxClosed, MailboxFull, NoReply
from actors.mailbox import Reply
from supervisor import ChildSpec
from tests.steps import counted_steps, steps_of_current_task


class Gate(Actor[Any]):
    """Handles nothing until its gate opens; then answers each message after ``delay``."""

    kind = "gate"
    mailbox_capacity = 2

    def __init__(self, delay: float = 0.0) -> None:
        super().__init__()
        self.opened = trio.Event()
        self.delay = delay
        self.seen: list[Any] = []

    async def handle(self, message: Any) -> Any:
        await self.opened.wait()
        await trio.sleep(self.delay)
        self.seen.append(message)
        return message


async def start_gate(system, delay: float = 0.0) -> tuple[Any, Gate]:
    gate = Gate(delay)
    handle = await system.root.start_child(ChildSpec("gate", lambda: gate))
    return handle, gate


class TestBackpressure:
    """A bounded mailbox pushes back on senders."""

    async def test_tell_waits_while_full(self, system, autojump_clock: trio.testing.MockClock) -> None:
        """With the actor busy and the mailbox full, tell blocks until there is room."""
        handle, gate = await start_gate(system)
        await handle.tell(0)  # taken by the actor, which now waits on its gate
        await trio.testing.wait_all_tasks_blocked()
        await handle.tell(1)
        await handle.tell(2)
        assert handle.statistics().mailbox_used == 2
        with trio.move_on_after(1) as scope:
            await handle.tell(3)
        assert scope.cancelled_caught
        gate.opened.set()
        await handle.tell(3)
        await trio.testing.wait_all_tasks_blocked()
        assert gate.seen == [0, 1, 2, 3]

    async def test_tell_nowait_raises_when_full(self, system) -> None:
        """tell_nowait refuses at capacity instead of waiting, and sends nothing."""
        handle, gate = await start_gate(system)
        handle.tell_nowait(0)
        await trio.testing.wait_all_tasks_blocked()
        handle.tell_nowait(1)
        handle.tell_nowait(2)
        with pytest.raises(MailboxFull):
            handle.tell_nowait(3)
        gate.opened.set()
        await trio.testing.wait_all_tasks_blocked()
        assert gate.seen == [0, 1, 2]

    async def test_sending_to_a_stopped_actor_raises(self, system) -> None:
        """A stopped actor's mailbox is closed to tell, tell_nowait and ask."""
        handle, _ = await start_gate(system)
        await system.root.terminate_child("gate", "test")
        with pytest.raises(MailboxClosed):
            handle.tell_nowait(1)
        with pytest.raises(MailboxClosed):
            await handle.tell(1)
        with pytest.raises(MailboxClosed):
            await handle.ask(1)


class TestAsk:
    """Request/reply over a private one-shot slot."""

    async def test_ask_returns_the_reply(self, system) -> None:
        """The asker gets the handler's return value."""
        handle, gate = await start_gate(system)
        gate.opened.set()
        assert await handle.ask("ping") == "ping"

    async def test_timed_out_ask_drops_the_late_reply(self, system, autojump_clock: trio.testing.MockClock) -> None:
        """A reply after the caller's timeout goes nowhere; the next ask gets its own answer."""
        handle, gate = await start_gate(system, delay=5)
        gate.opened.set()
        with trio.move_on_after(1) as scope:
            await handle.ask("late")
        assert scope.cancelled_caught
        assert await handle.ask("fresh") == "fresh"
        assert gate.seen == ["late", "fresh"]

    async def test_an_ask_with_room_yields_once(self, system) -> None:
        """An ask to a mailbox with room takes the asker one scheduler step (waiting for the reply),
        not a second one for queueing the message; the actor still gets it and answers."""
        handle, gate = await start_gate(system)
        gate.opened.set()
        with counted_steps(steps_of_current_task()) as steps:
            assert await handle.ask("ping") == "ping"
        assert steps.count == 1

    async def test_a_cancelled_asker_sends_nothing(self, system) -> None:
        """An ask made in a cancelled scope raises Cancelled before the message is queued."""
        handle, gate = await start_gate(system)
        gate.opened.set()
        with trio.CancelScope() as scope:
            scope.cancel()
            await handle.ask("never")
        assert await handle.ask("after") == "after"
        assert gate.seen == ["after"]

    async def test_queued_ask_gets_no_reply_when_actor_stops(self, system) -> None:
        """Asks still queued when the actor stops fail with NoReply instead of hanging."""
        handle, _ = await start_gate(system)
        results: list[BaseException] = []

        async def ask(value: int) -> None:
            try:
                await handle.ask(value)
            except NoReply as exc:
                results.append(exc)

        async with trio.open_nursery() as nursery:
            for value in range(3):
                nursery.start_soon(ask, value)
            await trio.testing.wait_all_tasks_blocked()
            await system.root.terminate_child("gate", "test")
        assert len(results) == 3


class TestReply:
    """The reply slot itself."""

    async def test_reply_before_wait_is_kept(self) -> None:
        """An answer delivered before the asker waits is returned at once."""
        reply = Reply("x")
        assert reply.send(7) is True
        assert await reply.wait() == 7

    async def test_second_answer_is_dropped(self) -> None:
        """Only the first answer counts."""
        reply = Reply("x")
        reply.send(1)
        assert reply.send(2) is False
        assert await reply.wait() == 1

    async def test_abandoned_reply_refuses_delivery(self) -> None:
        """Once the asker is cancelled, send reports the reply as dropped."""
        reply = Reply("x")
        with trio.move_on_after(0.01):
            await reply.wait()
        assert reply.send(1) is False
