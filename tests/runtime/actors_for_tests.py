"""Small actors the runtime tests drive."""

from __future__ import annotations

from typing import Any

import attrs
import trio

from actors.base import Actor


@attrs.frozen
class Crash:
    """Make the actor raise."""

    text: str = "boom"


@attrs.frozen
class Finish:
    """Make the actor's loop return normally."""


class Worker(Actor[Any]):
    """Echoes messages doubled; crashes or finishes on request; logs its life."""

    kind = "worker"

    def __init__(self, journal: list[str], name: str) -> None:
        super().__init__()
        self.journal = journal
        self.label = name

    async def on_start(self) -> None:
        self.journal.append(f"start {self.label}")

    async def handle(self, message: Any) -> Any:
        if isinstance(message, Crash):
            raise ValueError(message.text)
        if isinstance(message, Finish):
            self.mailbox.close()
            return None
        return message * 2

    async def on_stop(self) -> None:
        self.journal.append(f"stop {self.label}")


class Stubborn(Actor[Any]):
    """Ignores cancellation for ``delay`` seconds before it lets itself stop."""

    kind = "stubborn"

    def __init__(self, journal: list[str], delay: float) -> None:
        super().__init__()
        self.journal = journal
        self.delay = delay

    async def main(self) -> None:
        try:
            await trio.sleep_forever()
        finally:
            with trio.CancelScope(shield=True):
                await trio.sleep(self.delay)
            self.journal.append(f"stubborn gone at {trio.current_time():.0f}")


class FailsOnStart(Actor[Any]):
    """Raises before it is ready."""

    kind = "broken"

    async def on_start(self) -> None:
        raise RuntimeError("cannot start")
