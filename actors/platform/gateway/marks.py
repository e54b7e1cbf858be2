"""Reactions as acknowledgements: 👀 on each message a chat's turn is working on, swapped for ✅ once the
chat is answered, as Hermes marks them. The adapter says how to react on its platform; this keeps which
messages are marked, per chat, in a bounded memory."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import trio

from actors.platform.gateway.port import ChatRef
from actors.platform.gateway.recent import Recent

__all__ = ["DONE", "WORKING", "WorkMarks"]

WORKING, DONE = "👀", "✅"

#: Adds (True) or removes (False) the bot's own ``emoji`` on a message of a chat; failures are the
#: adapter's to log (a missing mark never fails a turn).
React = Callable[[ChatRef, str, str, bool], Awaitable[None]]


class WorkMarks:
    """The marked messages of every chat.

    Args:
        react: the platform's reaction call.
        spawn: starts a task in the adapter's scope (the desk's ``spawn``).
    """

    def __init__(self, react: React, spawn: Callable[..., None]) -> None:
        self._react = react
        self._spawn = spawn
        self._working = Recent()  # ChatRef -> (message id, set once its 👀 is placed) of each message marked

    def working(self, chat: ChatRef, message_id: str) -> None:
        """Mark ``message_id`` as being worked on."""
        placed = trio.Event()
        self._working.remember(chat, [*self._working.get(chat, []), (message_id, placed)])
        self._spawn(self._mark, chat, message_id, placed)

    def answered(self, chat: ChatRef) -> None:
        """The chat got its answer: each of its marked messages now shows ✅ instead of 👀."""
        for message_id, placed in self._working.pop(chat, None) or ():
            self._spawn(self._swap, chat, message_id, placed)

    async def _mark(self, chat: ChatRef, message_id: str, placed: trio.Event) -> None:
        try:
            await self._react(chat, message_id, WORKING, True)
        finally:
            placed.set()

    async def _swap(self, chat: ChatRef, message_id: str, placed: trio.Event) -> None:
        await placed.wait()  # a fast answer must not remove the 👀 before it is there (it would stay)
        await self._react(chat, message_id, WORKING, False)
        await self._react(chat, message_id, DONE, True)
