"""An actor's mailbox: a bounded memory channel of messages, and one-shot replies.

A tell puts the message itself in the mailbox; an ask wraps it in an
:class:`Envelope` with a :class:`Reply`, a private one-shot slot only the asker
waits on. A reply that arrives after the
asker gave up (cancelled, timed out) is dropped: it can never reach anyone else.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, Generic, TypeVar

import outcome
import trio

from actors.errors import MailboxClosed, MailboxFull, NoReply

__all__ = ["Envelope", "Mailbox", "Reply"]

M = TypeVar("M")
#: The type of an ask's reply.
R = TypeVar("R")


class Reply(Generic[R]):
    """The answer slot of one ask: set once by the actor, awaited once by the asker."""

    __slots__ = ("_abandoned", "_outcome", "_path", "_waiter")

    def __init__(self, path: str) -> None:
        self._path = path
        self._outcome: outcome.Outcome[R] | None = None
        self._waiter: trio.lowlevel.Task | None = None
        # Invariant: once abandoned, nothing is ever delivered.
        self._abandoned = False

    def send(self, value: R) -> bool:
        """Answer with ``value``. Returns False when the asker is gone (dropped)."""
        return self._deliver(outcome.Value(value))

    def fail(self, error: BaseException) -> bool:
        """Answer with an exception the asker will raise. False when dropped."""
        return self._deliver(outcome.Error(error))

    def close(self) -> None:
        """The actor will not answer: the asker gets :class:`NoReply`."""
        self._deliver(outcome.Error(NoReply(self._path, "stopped before replying")))

    @property
    def answered(self) -> bool:
        """True once an answer (or a close) was delivered or the asker left."""
        return self._outcome is not None or self._abandoned

    def _deliver(self, result: outcome.Outcome[R]) -> bool:
        if self._abandoned or self._outcome is not None:
            return False
        self._outcome = result
        if self._waiter is not None:
            trio.lowlevel.reschedule(self._waiter, result)
            self._waiter = None
        return True

    async def wait(self) -> R:
        """The answer; raises what the actor failed with, or NoReply."""
        if self._outcome is not None:
            await trio.lowlevel.checkpoint()
            return self._outcome.unwrap()
        self._waiter = trio.lowlevel.current_task()

        def abort(_: Any) -> trio.lowlevel.Abort:
            self._abandoned = True
            self._waiter = None
            return trio.lowlevel.Abort.SUCCEEDED

        # Trio unwraps the Outcome[R] that _deliver rescheduled this task with (it types the result Any).
        answer: R = await trio.lowlevel.wait_task_rescheduled(abort)
        return answer


class Envelope(Generic[M]):
    """An ask in a mailbox: the message and the slot its answer goes to."""

    __slots__ = ("message", "reply")

    def __init__(self, message: M, reply: Reply[Any] | None = None) -> None:
        self.message = message
        self.reply = reply


class Mailbox(Generic[M]):
    """A bounded queue of messages (an ask as an :class:`Envelope`): senders
    feel backpressure when it is full."""

    __slots__ = ("_path", "_receive", "_send", "capacity")

    def __init__(self, path: str, capacity: int) -> None:
        if capacity < 1:
            raise ValueError("a mailbox holds at least one message")
        self._path = path
        self.capacity = capacity
        self._send: trio.MemorySendChannel[M | Envelope[M]]
        self._receive: trio.MemoryReceiveChannel[M | Envelope[M]]
        self._send, self._receive = trio.open_memory_channel(capacity)

    @property
    def used(self) -> int:
        """Items waiting to be read (read from the channel when a snapshot asks)."""
        return self._receive.statistics().current_buffer_used

    async def put(self, item: M | Envelope[M]) -> None:
        """Queue a message (or an ask's envelope), waiting while the mailbox is full."""
        try:
            await self._send.send(item)
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            raise MailboxClosed(self._path, "mailbox is closed") from None

    async def put_promptly(self, item: M | Envelope[M]) -> None:
        """Queue an ask's envelope: at once when there is room (no schedule point of its own: the
        caller's wait for the reply is one), else waiting as :meth:`put` does. A cancelled caller
        sends nothing, as with :meth:`put`.

        Every ask came this way through :meth:`put`, whose channel send yields to the scheduler even
        when there is room: a task step per ask (about eight per HTTP API completion) for nothing.
        """
        await trio.lowlevel.checkpoint_if_cancelled()
        try:
            self._send.send_nowait(item)
        except trio.WouldBlock:
            await self.put(item)
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            raise MailboxClosed(self._path, "mailbox is closed") from None

    def put_nowait(self, item: M | Envelope[M]) -> None:
        """Queue a message (or envelope) or raise :class:`MailboxFull` at once."""
        try:
            self._send.send_nowait(item)
        except trio.WouldBlock:
            raise MailboxFull(self._path, f"mailbox is full ({self.capacity} messages)") from None
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            raise MailboxClosed(self._path, "mailbox is closed") from None

    def get(self) -> Awaitable[M | Envelope[M]]:
        """Await the next item. Raises EndOfChannel once closed and drained.

        Returns the channel's own receive rather than wrapping it: an idle actor
        waits here, and one coroutine frame less per idle actor is ~300 bytes.
        """
        return self._receive.receive()

    def get_nowait(self) -> M | Envelope[M] | None:
        """The next item if one is waiting, else None."""
        try:
            return self._receive.receive_nowait()
        except (trio.WouldBlock, trio.EndOfChannel):
            return None

    def close(self) -> None:
        """Refuse further messages and answer every queued ask with NoReply (idempotent)."""
        self._send.close()
        while True:
            try:
                item = self._receive.receive_nowait()
            except (trio.WouldBlock, trio.EndOfChannel, trio.ClosedResourceError):
                break
            if type(item) is Envelope and item.reply is not None:
                item.reply.close()
        self._receive.close()
