"""Watching one user message's turn in a session, from before it is sent until it ends.

A session may be shared (several clients, subagents relaying events, messages
queued behind a running turn), so the watch subscribes *before* sending and
then keeps to its own turn: the first ``TurnStarted`` of its own session with
its text, and the ``TurnFinished`` with that turn's id. Events relayed from
subagents carry the child's session id; they are passed on but never end the watch.
"""

from __future__ import annotations

from typing import Any

import attrs

from actors.platform.api.wire import TurnUsage
from actors.session import SessionService, SubscriptionClosed
from messages.session import EventFeed, Subscribe
from messages.events import SessionEvent, SubscriberDropped, TurnFinished, TurnStarted, UsageUpdated

__all__ = ["FinishedTurn", "TurnLost", "TurnWatch", "baseline_usage", "send_watched"]


class TurnLost(RuntimeError):
    """The session's event stream ended before the turn finished (the session stopped)."""


@attrs.frozen
class FinishedTurn:
    """A watched turn once it has finished: its final text, reason (completed, interrupted, budget, error) and usage."""

    final_text: str
    reason: str
    error: str | None
    usage: TurnUsage


def _usage(event: UsageUpdated) -> TurnUsage:
    return TurnUsage(event.prompt_tokens, event.completion_tokens)


class TurnWatch:
    """The events of one turn, read with :meth:`next_event` until it returns None.

    Args:
        session_id: the session the message was sent to.
        subscription: subscribed before the message was sent.
        text: the message (how its ``TurnStarted`` is recognised).
        baseline: the session's usage when subscribing (a turn's usage is the difference).
        status: what the session answered the message with (``started``, ``queued``).
    """

    def __init__(self, session_id: str, subscription: EventFeed, text: str, baseline: TurnUsage, status: str) -> None:
        self.session_id = session_id
        self.status = status
        self.turn_id: int | None = None
        self.outcome: FinishedTurn | None = None
        self.last_seq = 0
        self._subscription = subscription
        self._text = text
        self._baseline = baseline
        self._latest = baseline

    @property
    def started(self) -> bool:
        """True once this message's turn has begun."""
        return self.turn_id is not None

    async def next_event(self) -> SessionEvent | None:
        """The next event of this turn (own or a subagent's); None once it has finished.

        Raises:
            TurnLost: the subscription ended first (the session stopped, or this reader fell too far behind).
        """
        if self.outcome is not None:
            return None
        while True:
            try:
                event = await self._subscription.receive()
            except SubscriptionClosed as exc:
                raise TurnLost(f"session {self.session_id}: event stream ended before the turn finished") from exc
            if isinstance(event, SubscriberDropped):
                raise TurnLost(f"session {self.session_id}: {event.reason}")
            relevant = self._observe(event)
            if relevant:
                self.last_seq = event.seq
                return event

    def next_event_nowait(self) -> SessionEvent | None:
        """The next event of this turn if one is already buffered; else (or once finished) None.

        Raises:
            TurnLost: the session's stream ended (its last event says why).
        """
        while self.outcome is None:
            event = self._subscription.receive_nowait()
            if event is None:
                return None
            if isinstance(event, SubscriberDropped):
                raise TurnLost(f"session {self.session_id}: {event.reason}")
            if self._observe(event):
                self.last_seq = event.seq
                return event
        return None

    def _observe(self, event: SessionEvent) -> bool:
        mine = event.session_id == self.session_id
        if self.turn_id is None:
            if mine and isinstance(event, UsageUpdated):
                self._baseline = self._latest = _usage(event)  # an earlier turn's, still running when we arrived
            elif mine and isinstance(event, TurnStarted) and event.text == self._text:
                self.turn_id = event.turn_id
                return True
            return False
        if mine and isinstance(event, UsageUpdated):
            self._latest = _usage(event)
        elif mine and isinstance(event, TurnFinished) and event.turn_id == self.turn_id:
            self.outcome = FinishedTurn(event.final_text, event.reason, event.error, self._latest.minus(self._baseline))
            self.close()
        return True

    def close(self) -> None:
        """Stop watching (the turn itself goes on)."""
        self._subscription.close()


async def send_watched(sessions: SessionService, session_id: str, text: str, *, source: str, label: str) -> TurnWatch:
    """Subscribe to a session, then send it ``text`` (queued behind a running turn); the watch of that turn.

    For front doors that start a turn and wait for its answer (cron, messaging platforms).

    Raises:
        SessionNotFound: the session is gone. TooManyRunningTurns: the daemon's cap is reached.
    """
    handle = await sessions.get(session_id)
    watch = TurnWatch(session_id, await handle.ask(Subscribe(label)), text, baseline_usage(handle.statistics().details), "started")
    try:
        watch.status = await sessions.send(session_id, text, source=source, busy_mode="queue", handle=handle)
    except BaseException:
        watch.close()
        raise
    return watch


def baseline_usage(details: dict[str, Any]) -> TurnUsage:
    """A session's usage from its snapshot details (what its finished turns used)."""
    return TurnUsage(int(details.get("prompt_tokens", 0)), int(details.get("completion_tokens", 0)))
