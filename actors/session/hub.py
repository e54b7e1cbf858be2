"""The session's event hub: sequence numbers, a replay buffer, and one bounded
buffer per subscriber so a slow client never slows the session.

Overflow policy, per subscriber: when its buffer is full, adjacent text and
reasoning deltas in it are coalesced into one (keeping the later sequence
number, so ``--since`` still resumes correctly); if that frees no room the
subscriber is dropped, with :class:`SubscriberDropped` as its last event. A
dropped client can reattach from the replay buffer with ``--since``.

A person's client that attaches without ``--since`` while a turn runs is given
that turn's start, its answer text so far (as one delta) and its tools still
running first, so it shows the turn as running (with the commands and the words
already streamed) rather than a tool or a turn ending out of nowhere.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import attrs
import trio

from messages.events import (
    FellBehind,
    ReasoningDelta,
    SessionEvent,
    SubscriberDropped,
    TextDelta,
    ToolFinished,
    ToolStarted,
    TurnFinished,
    TurnStarted,
)

__all__ = ["EventHub", "Subscription", "SubscriptionClosed"]

_DELTAS = (TextDelta, ReasoningDelta)

#: An event class the hub builds (:meth:`EventHub.publish` returns what it was given the class of).
E = TypeVar("E", bound=SessionEvent)


class SubscriptionClosed(Exception):
    """Raised by :meth:`Subscription.receive` once the subscription has ended."""


class Subscription:
    """One subscriber's view of a session's events: ``async for event in sub``."""

    __slots__ = ("_buffer", "_capacity", "_closed", "_hub", "_wakeup", "label", "passive")

    def __init__(self, hub: EventHub, label: str, capacity: int, passive: bool = False) -> None:
        self.label = label
        self.passive = passive
        self._hub = hub
        self._capacity = capacity
        self._buffer: deque[SessionEvent] = deque()
        self._closed = False
        self._wakeup = trio.Event()

    @property
    def closed(self) -> bool:
        """True once the subscription ended (detached or dropped)."""
        return self._closed

    @property
    def pending(self) -> int:
        """Events buffered, not yet received."""
        return len(self._buffer)

    def close(self) -> None:
        """Detach: no more events are delivered after those already buffered."""
        if not self._closed:
            self._closed = True
            self._hub._forget(self)
            self._wakeup.set()

    async def receive(self) -> SessionEvent:
        """The next event, waiting for one.

        Raises:
            SubscriptionClosed: closed and drained.
        """
        while not self._buffer:
            if self._closed:
                raise SubscriptionClosed(self.label)
            self._wakeup = trio.Event()
            await self._wakeup.wait()
        return self._buffer.popleft()

    def receive_nowait(self) -> SessionEvent | None:
        """The next buffered event, or None."""
        return self._buffer.popleft() if self._buffer else None

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> SessionEvent:
        try:
            return await self.receive()
        except SubscriptionClosed:
            raise StopAsyncIteration from None

    def _offer(self, event: SessionEvent) -> None:
        if self._closed:
            return
        if len(self._buffer) >= self._capacity and not self._coalesce():
            self._drop(f"too slow: {len(self._buffer)} events not yet read")
            return
        self._buffer.append(event)
        self._wakeup.set()

    def _coalesce(self) -> bool:
        """Merge adjacent deltas of one kind and source; True if room was made."""
        merged: deque[SessionEvent] = deque()
        for event in self._buffer:
            last = merged[-1] if merged else None
            if (
                isinstance(event, _DELTAS)
                and type(last) is type(event)
                and last.path == event.path
            ):
                merged[-1] = attrs.evolve(event, text=last.text + event.text)
            else:
                merged.append(event)
        self._buffer = merged
        return len(merged) < self._capacity

    def _drop(self, reason: str) -> None:
        hub = self._hub
        self._buffer.append(
            SubscriberDropped(session_id=hub.session_id, seq=hub.seq, path=hub.path, reason=reason)
        )
        self.close()


class EventHub:
    """Numbers and fans out a session's events.

    Args:
        session_id / path: stamped on events built through :meth:`publish`.
        replay_size: how many recent events a (re)attaching client can resume from.
        subscriber_capacity: each subscriber's buffer before coalescing and dropping.
        on_leave: called when a subscriber leaves (the session may have become quiet).
    """

    def __init__(
        self, session_id: str, path: str, *, replay_size: int = 1000, subscriber_capacity: int = 256,
        on_leave: Callable[[], None] | None = None,
    ) -> None:
        self.session_id = session_id
        self.path = path
        # Invariant: seq is the number of the last event published (0: none yet).
        self.seq = 0
        self._replay: deque[SessionEvent] = deque(maxlen=replay_size)
        self._subscribers: list[Subscription] = []
        self._capacity = subscriber_capacity
        # Invariant: the running turn's TurnStarted (None between turns), its tools still running by call id,
        # and its own text deltas so far (empty between turns).
        self._turn: TurnStarted | None = None
        self._running_tools: dict[str, ToolStarted] = {}
        self._turn_text: list[TextDelta] = []
        self._on_leave = on_leave

    def resume_from(self, seq: int) -> None:
        """Continue numbering after ``seq`` (the persisted high-water mark)."""
        self.seq = max(self.seq, seq)

    @property
    def subscriber_count(self) -> int:
        """Live subscriptions."""
        return len(self._subscribers)

    @property
    def watcher_count(self) -> int:
        """Live subscriptions that keep the session awake (all but the passive ones)."""
        return sum(1 for subscriber in self._subscribers if not subscriber.passive)

    def publish(self, cls: type[E], **fields: Any) -> E:
        """Build an event of ``cls`` for this session, number it and deliver it."""
        self.seq += 1
        event = cls(session_id=self.session_id, seq=self.seq, path=self.path, **fields)
        self._fan_out(event)
        return event

    def relay(self, event: SessionEvent) -> SessionEvent:
        """Re-publish an event from elsewhere (a subagent), keeping its path and
        session id, numbered in this session's sequence."""
        self.seq += 1
        numbered = attrs.evolve(event, seq=self.seq)
        self._fan_out(numbered)
        return numbered

    def _fan_out(self, event: SessionEvent) -> None:
        self._replay.append(event)
        if event.path == self.path:
            self._follow_turn(event)
        for subscriber in tuple(self._subscribers):
            subscriber._offer(event)

    def _follow_turn(self, event: SessionEvent) -> None:
        """Keep what a client attaching mid-turn needs to see first (the session's own events only)."""
        if isinstance(event, TurnStarted):
            self._turn = event
            self._running_tools.clear()
            self._turn_text.clear()
        elif isinstance(event, TextDelta) and self._turn is not None:
            self._turn_text.append(event)
        elif isinstance(event, ToolStarted):
            self._running_tools[event.call_id] = event
        elif isinstance(event, ToolFinished):
            self._running_tools.pop(event.call_id, None)
        elif isinstance(event, TurnFinished):
            self._turn = None
            self._running_tools.clear()
            self._turn_text.clear()

    def _running_turn(self) -> list[SessionEvent]:
        """The running turn as a late subscriber first sees it: its start, its text so far as one delta
        (numbered as the last one, so resuming after it repeats nothing), its running tools."""
        if self._turn is None:
            return []
        shown: list[SessionEvent] = [self._turn, *self._running_tools.values()]
        if self._turn_text:
            last = self._turn_text[-1]
            shown.append(attrs.evolve(last, text="".join(delta.text for delta in self._turn_text)))
        return shown

    def subscribe(
        self, label: str, since: int | None = None, also: Iterable[SessionEvent] = (), *, passive: bool = False,
        running_turn: bool = False,
    ) -> Subscription:
        """A new subscription; with ``since``, the buffered events after it come first.

        When ``since`` is older than the replay buffer, a :class:`FellBehind`
        event says so plainly before whatever is still available. Without
        ``since`` but with ``running_turn``, a running turn's start, its text so far and its running tools come first.
        ``also`` are events to show again (pending requests) unless replayed anyway.
        """
        subscription = Subscription(self, label, self._capacity, passive)
        if since is not None:
            replayed = list(self._replay_after(since))
            shown = {event.seq for event in replayed}
            subscription._buffer.extend([*replayed, *(event for event in also if event.seq not in shown)])
        else:
            # In sequence order, so a client that skips what it has seen (the dashboard) skips nothing new.
            first = {event.seq: event for event in [*(self._running_turn() if running_turn else []), *also]}
            subscription._buffer.extend(sorted(first.values(), key=lambda event: event.seq))
        self._subscribers.append(subscription)
        return subscription

    def _replay_after(self, since: int) -> Iterable[SessionEvent]:
        oldest = self._replay[0].seq if self._replay else self.seq + 1
        if since + 1 < oldest and since < self.seq:
            yield FellBehind(
                session_id=self.session_id, seq=self.seq, path=self.path,
                requested=since, oldest_available=oldest,
            )
        for event in self._replay:
            if event.seq > since:
                yield event

    def _forget(self, subscription: Subscription) -> None:
        if subscription in self._subscribers:
            self._subscribers.remove(subscription)
            if self._on_leave is not None:
                self._on_leave()

    def close_all(self, reason: str) -> None:
        """End every subscription (the session is stopping)."""
        for subscription in tuple(self._subscribers):
            subscription._buffer.append(
                SubscriberDropped(session_id=self.session_id, seq=self.seq, path=self.path, reason=reason)
            )
            subscription.close()
