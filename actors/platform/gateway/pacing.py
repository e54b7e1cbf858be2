"""Streamed edits within a platform's rate limits: one message is edited at most once per ``interval``
seconds (Slack's ``chat.update`` is Tier 3, about 50 a minute; Matrix homeservers rate-limit sends alike).
An edit that comes sooner waits for its turn, and edits that pile up meanwhile collapse into the latest
(a progress message shows where the turn is now, not every step it took): the message always ends with
the last text asked for."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import trio

__all__ = ["EDIT_EVERY", "EditPacer"]

#: Seconds between two edits of one message (Slack's Tier 3 pace).
EDIT_EVERY = 1.2


class EditPacer:
    """Paces the edits of each message.

    Args:
        spawn: starts a task in the adapter's scope (a late edit is sent from there).
        interval: seconds between two edits of one message.
        clock: Trio's clock.
    """

    def __init__(
        self, spawn: Callable[..., None], interval: float = EDIT_EVERY, clock: Callable[[], float] = trio.current_time,
    ) -> None:
        self._spawn = spawn
        self.interval = interval
        self._clock = clock
        self._last: dict[str, float] = {}
        self._waiting: dict[str, Callable[[], Awaitable[None]]] = {}
        self.coalesced = 0

    async def edit(self, key: str, send: Callable[[], Awaitable[None]]) -> None:
        """Send the edit of message ``key`` now if its turn has come; otherwise keep it as that message's
        next edit (replacing one already waiting), sent when the turn comes."""
        if key in self._waiting:
            self._waiting[key] = send
            self.coalesced += 1
            return
        due = self._last.get(key, float("-inf")) + self.interval
        if self._clock() >= due:
            self._sent(key)
            await send()
            return
        self._waiting[key] = send
        self._spawn(self._later, key, due)

    async def _later(self, key: str, due: float) -> None:
        await trio.sleep_until(due)
        send = self._waiting.pop(key)
        self._sent(key)
        await send()

    def _sent(self, key: str) -> None:
        self._last[key] = self._clock()
        if len(self._last) > 1024:  # messages edited long ago have no turn to wait for
            horizon = self._clock() - self.interval
            self._last = {k: t for k, t in self._last.items() if t > horizon}
