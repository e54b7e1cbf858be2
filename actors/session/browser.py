"""``browser``: a session's Chromium, as an actor in the session's tree.

Started by the first browser tool call of the session, it belongs to the session, not to the call or the
turn: the pages stay open between calls and turns. It is stopped with the session (killed, ended, or put
to sleep by hibernation: a hibernated session's pages are closed, its next browser call starts afresh),
after ``browser.inactivity_timeout`` seconds unused, or by ``hermes-actors kill <path>``; stopping it
stops the browser's whole jail. A call in flight is the call's own to cancel (an interrupt): the browser
stops that page's loading and goes on serving.
"""

from __future__ import annotations

from typing import Any

import trio

from actors import Actor
from messages.supervision import ActorState
from tools.browser import Browser

__all__ = ["BrowserActor"]


class BrowserActor(Actor[Any]):
    """Runs one session's browser until it exits, sits unused too long, or is stopped."""

    kind = "browser"
    mailbox_capacity = 1

    def __init__(self, browser: Browser) -> None:
        super().__init__()
        self.browser = browser

    def snapshot_details(self) -> dict[str, Any]:
        browser = self.browser
        return {"pid": browser.pid, "pages": browser.page_count, "url": browser.current_url[:200], "busy": browser.busy}

    async def on_start(self) -> None:
        assert self._nursery is not None
        # Ready once its first page is attached: a failure to start fails the spawn (the tool's error).
        await self._nursery.start(self.browser.run)

    async def main(self) -> None:
        browser = self.browser
        timeout = browser.config.inactivity_timeout
        while True:
            self.state = ActorState.BUSY if browser.busy else ActorState.IDLE
            self.activity = browser.current_url[:80]
            if not browser.busy and trio.current_time() >= browser.last_used + timeout:
                return
            with trio.move_on_at(browser.last_used + timeout if not browser.busy else trio.current_time() + timeout):
                await browser.used.wait()
