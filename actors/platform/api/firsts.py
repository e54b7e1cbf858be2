"""First tokens before tails: the order the event loop gives completions' work.

Trio runs ready tasks in turn, so in a burst of N completions every request's
whole work (parse, session, turn, provider request, the rest of the stream,
the closing frames, the session's teardown) interleaves, and each first token
comes after about N requests' worth of work. Two rules change the order, not
the amount:

- **Slots.** At most ``slots`` admitted completions are on their way to their
  first token at once; the others wait in arrival order. So the first requests
  of a burst reach their first token after a few requests' work, not all of it.
  A request gives its slot back at its first token, when it ends, or after
  ``hold`` seconds; and whenever the event loop has nothing to run (every
  holder waits on its provider) the queue's head takes a slot over the limit.
  A slow model's first token waits on the network, not on this loop, and must
  not hold the queue.
- **Tails wait.** Work after a completion's first token (reading the rest of
  the provider's answer, through ``SessionDeps.pace``; the rest of its text, its
  closing frames, its session's teardown) waits at :meth:`FirstTokens.tail`
  while any request is waiting for or holding a slot: until ``defer_passes``
  other first tokens have come, or, oldest first and one at a time, the loop
  has nothing else to run, at most ``defer`` seconds each time. (Letting every
  tail go at an idle moment would put all their work back before the next
  first tokens.) Each wait is bounded,
  and each part waits once (a provider call after its first text, the stream
  after its first write, the teardown): deferred, never starved.

Total CPU is unchanged; a stream's chunks keep their order (one task writes
them); a client leaving is noticed at once (a wait here is cancelled like any
other). Only API sessions' provider calls keep this pace: an interactive answer
never waits for a burst of completions
(docs/DECISIONS.md#d-api-first-tokens).
"""

from __future__ import annotations

from collections import deque

import trio
import trio.testing

__all__ = ["DEFER_PASSES", "DEFER_SECONDS", "HOLD_SECONDS", "SLOTS", "FirstTokens", "Ticket"]

#: Completions on their way to a first token at once (enough to cover the provider's answer time).
SLOTS = 8
#: Longer than this before its first token, a request is waiting on its provider: its slot is given back.
HOLD_SECONDS = 0.25
#: The longest one :meth:`FirstTokens.tail` waits, counted in other requests' first tokens (a burst's worth).
DEFER_PASSES = 64
#: ... and in seconds: what bounds a stream's delay under a flood of new requests however slow they are.
DEFER_SECONDS = 0.5


class Ticket:
    """One admitted completion's place before its first token; :meth:`passed` gives it back (idempotent).

    Args:
        order: the gate the slot was taken from.
        deadline: when (``trio.current_time()``) the slot is given back if the first token has not come.
    """

    def __init__(self, order: FirstTokens, deadline: float) -> None:
        self._order: FirstTokens | None = order
        self.deadline = deadline

    @property
    def done(self) -> bool:
        """True once passed."""
        return self._order is None

    def passed(self) -> None:
        """The first token is out (or the request ended, or waited past its deadline): free the slot."""
        if self._order is not None:
            self._order._leave()
            self._order = None


class _Waiter:
    """A request queued for a slot."""

    __slots__ = ("granted", "scope", "stirred")

    def __init__(self) -> None:
        self.granted = False
        # Set when the slot is granted, or when this waiter becomes the queue's head.
        self.stirred = trio.Event()
        # The head's wait for an idle loop, cancelled when a slot is granted first.
        self.scope: trio.CancelScope | None = None


class _Tail:
    """A tail waiting in :meth:`FirstTokens.tail`."""

    __slots__ = ("scope", "stirred", "until_passes")

    def __init__(self, until_passes: int) -> None:
        # The gate's pass count that lets it go.
        self.until_passes = until_passes
        self.scope = trio.CancelScope()
        # Set when it becomes the oldest waiting tail: the one an idle loop lets go.
        self.stirred = trio.Event()


class FirstTokens:
    """The gate: slots before the first token, tails after it.

    Args:
        slots: completions on their way to their first token at once (more while the loop is idle).
        hold: seconds a request may hold its slot.
        defer: the longest one :meth:`tail` waits, in seconds.
        defer_passes: the longest one :meth:`tail` waits, in other requests' first tokens.
    """

    def __init__(
        self, slots: int = SLOTS, hold: float = HOLD_SECONDS, defer: float = DEFER_SECONDS, defer_passes: int = DEFER_PASSES
    ) -> None:
        self._slots = slots
        self._hold = hold
        self._defer = defer
        self._defer_passes = defer_passes
        #: Tickets passed so far (first tokens, ends, deadlines): the gate's measure of progress.
        self.passes = 0
        # Waiting tails, oldest first.
        self._tails: deque[_Tail] = deque()
        self._holding = 0
        self._queue: deque[_Waiter] = deque()
        # Invariant: waiting counts the requests queued for a slot or holding one (unpassed tickets).
        self.waiting = 0

    async def enter(self) -> Ticket:
        """Wait for a slot, in arrival order; the ticket to pass at the first token.

        The queue's head also takes a slot over the limit when the event loop has nothing else to run:
        every holder is then waiting on its provider, and the loop's idle time is the head's to use.
        """
        await trio.lowlevel.checkpoint_if_cancelled()
        self.waiting += 1
        if self._holding < self._slots and not self._queue:
            self._holding += 1
        else:
            waiter = _Waiter()
            self._queue.append(waiter)
            try:
                await self._wait(waiter)
            except BaseException:
                self.waiting -= 1
                if waiter.granted:
                    self._release()
                else:
                    self._forget(waiter)
                raise
        return Ticket(self, trio.current_time() + self._hold)

    async def _wait(self, waiter: _Waiter) -> None:
        while not waiter.granted:
            if self._queue[0] is not waiter:
                await waiter.stirred.wait()
                continue
            with trio.CancelScope() as waiter.scope:
                await trio.testing.wait_all_tasks_blocked()
            waiter.scope = None
            if not waiter.granted:
                self._holding += 1
                self._grant(self._queue.popleft())

    def _grant(self, waiter: _Waiter) -> None:
        waiter.granted = True
        waiter.stirred.set()
        if waiter.scope is not None:
            waiter.scope.cancel()
        if self._queue:
            self._queue[0].stirred.set()

    def _forget(self, waiter: _Waiter) -> None:
        head = self._queue[0] is waiter
        self._queue.remove(waiter)
        if head and self._queue:
            self._queue[0].stirred.set()

    def _release(self) -> None:
        self._holding -= 1
        if self._queue and self._holding < self._slots:
            self._holding += 1
            self._grant(self._queue.popleft())

    def _leave(self) -> None:
        self.waiting -= 1
        self.passes += 1
        self._release()
        tails = self._tails
        if not self.waiting:
            for waiting_tail in tails:
                waiting_tail.scope.cancel()
            tails.clear()
            return
        if tails and tails[0].until_passes <= self.passes:
            while tails and tails[0].until_passes <= self.passes:
                tails.popleft().scope.cancel()
            if tails:
                tails[0].stirred.set()

    async def tail(self) -> None:
        """Wait while any request is before its first token: until none is, or ``defer_passes`` of them
        have passed it (the machine's load does not stretch that bound), or it is the oldest waiting tail
        and the event loop has nothing else to run (a slot holder waiting on its provider leaves it idle:
        one tail at a time may use it), at most ``defer`` seconds. A checkpoint for cancellation only,
        when no request is waiting."""
        if not self.waiting:
            await trio.lowlevel.checkpoint_if_cancelled()
            return
        waiting_tail = _Tail(self.passes + self._defer_passes)
        self._tails.append(waiting_tail)
        if len(self._tails) == 1:
            waiting_tail.stirred.set()
        try:
            with trio.move_on_after(self._defer), waiting_tail.scope:
                await waiting_tail.stirred.wait()
                # The oldest tail: an idle loop lets it go, and the next becomes the oldest.
                await trio.testing.wait_all_tasks_blocked()
        finally:
            self._forget_tail(waiting_tail)

    def _forget_tail(self, waiting_tail: _Tail) -> None:
        tails = self._tails
        if tails and tails[0] is waiting_tail:
            tails.popleft()
            if tails:
                tails[0].stirred.set()
        elif waiting_tail in tails:
            tails.remove(waiting_tail)
