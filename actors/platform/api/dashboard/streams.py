"""The dashboard's two live feeds, as Server-Sent Events, each bounded so a slow browser costs the
daemon nothing but its own stream.

- The state feed sends the whole picture (tree, platforms, cron) at most every
  :data:`LIVE_INTERVAL_SECONDS`, and only when it changed: a browser that reads slowly is simply sent
  the latest picture when it next can; nothing queues up for it. One picture serves every browser.
- A session's feed relays the session's events. The session's event hub keeps one bounded buffer per
  subscriber; one that falls too far behind is dropped (``SubscriberDropped``), which is passed on as a
  ``resync`` event: the page reloads the transcript and subscribes again.

At most :data:`MAX_STREAMS` streams are open at once (:class:`StreamSlots`); more are answered 429.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import trio

from actors.platform.api.errors import TooManyRuns
from actors.platform.api.sse import Emit, SseResponse
from actors.platform.api.wire import event_frame, event_payload
from actors.session import SubscriptionClosed
from messages.events import SubscriberDropped
from messages.session import EventFeed

__all__ = [
    "LIVE_INTERVAL_SECONDS", "MAX_STREAMS", "HeldStream", "Picture", "SharedPicture", "StreamSlots", "relay_session",
    "stream_state",
]

#: How often the state feed looks for changes.
LIVE_INTERVAL_SECONDS = 0.5
#: The state feed is sent again after this long even unchanged (the ages it shows move on; a comment
#: alone would keep proxies from closing an idle stream, this does both).
REFRESH_SECONDS = 10.0
#: Dashboard streams open at once, over every browser.
MAX_STREAMS = 32


class StreamSlots:
    """Counts the open dashboard streams against :data:`MAX_STREAMS`."""

    def __init__(self, limit: int = MAX_STREAMS) -> None:
        self.limit = limit
        self.open = 0

    def take(self) -> None:
        """Take a slot (give it back with :meth:`release`).

        Raises:
            TooManyRuns: every slot is taken (answered 429).
        """
        if self.open >= self.limit:
            raise TooManyRuns(f"too many dashboard streams are open (max {self.limit}); close a tab")
        self.open += 1

    def release(self) -> None:
        """Give a slot back."""
        self.open -= 1


class HeldStream:
    """An SSE response that holds a slot of ``slots`` until it has ended (the slot is already taken)."""

    def __init__(self, slots: StreamSlots, response: SseResponse) -> None:
        self._slots = slots
        self._response = response

    async def __call__(self, scope: Any, receive: Callable[[], Awaitable[Any]], send: Callable[[Any], Awaitable[None]]) -> None:
        try:
            await self._response(scope, receive, send)
        finally:
            self._slots.release()


def _frame(event: str, payload: Any) -> bytes:
    return f"event: {event}\ndata: {json.dumps(payload, separators=(',', ':'))}\n\n".encode()


def _without_ages(value: Any) -> Any:
    """``value`` with every ``age_seconds`` left out (what changes on its own between two looks)."""
    if isinstance(value, dict):
        return {k: _without_ages(v) for k, v in value.items() if k != "age_seconds"}
    if isinstance(value, list):
        return [_without_ages(v) for v in value]
    return value


@attrs.frozen
class Picture:
    """One look at the daemon for the state feed."""

    frame: bytes  # the ``state`` event, encoded once for every browser
    shape: str  # what it shows, less the ages: two equal shapes mean nothing new to send


class SharedPicture:
    """The state feed's picture, taken at most once per :data:`LIVE_INTERVAL_SECONDS` however many
    browsers watch (a large tree is walked and encoded once, not once per tab).

    Args:
        read: takes the picture (the dashboard desk's ``state``).
    """

    def __init__(self, read: Callable[[], Awaitable[dict[str, Any]]]) -> None:
        self._read = read
        self._lock = trio.Lock()
        self._picture: Picture | None = None
        self._taken_at = 0.0

    async def latest(self) -> Picture:
        """The picture, taken again when the last one is older than the interval."""
        async with self._lock:
            now = trio.current_time()
            if self._picture is None or now - self._taken_at >= LIVE_INTERVAL_SECONDS:
                state = await self._read()
                self._picture = Picture(_frame("state", state), json.dumps(_without_ages(state), sort_keys=True))
                self._taken_at = now
            return self._picture


async def stream_state(pictures: SharedPicture, emit: Emit) -> None:
    """Send the picture as ``state`` events whenever it changes (and every :data:`REFRESH_SECONDS`)."""
    sent_shape: str | None = None
    sent_at = -REFRESH_SECONDS
    while True:
        picture = await pictures.latest()
        now = trio.current_time()
        if picture.shape != sent_shape or now - sent_at >= REFRESH_SECONDS:
            await emit(picture.frame)
            sent_shape, sent_at = picture.shape, now
        await trio.sleep(LIVE_INTERVAL_SECONDS)


async def relay_session(feed: EventFeed, emit: Emit) -> None:
    """Relay a session's events until it stops (``end``) or this reader is dropped (``resync``)."""
    try:
        while True:
            try:
                event = await feed.receive()
            except SubscriptionClosed:
                await emit(_frame("end", {"reason": "the session stopped"}))
                return
            if isinstance(event, SubscriberDropped):
                await emit(_frame("resync", {"reason": event.reason}))
                return
            await emit(event_frame(event.seq, event_payload(event)))
    finally:
        feed.close()
