"""The dashboard's live feeds stay bounded: a browser that stops reading is dropped and told to resync,
the state feed sends only the latest picture, and streams past the cap are refused."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import trio
import trio.testing

from actors.platform.api.dashboard.streams import (
    LIVE_INTERVAL_SECONDS,
    SharedPicture,
    StreamSlots,
    relay_session,
    stream_state,
)
from actors.platform.api.errors import TooManyRuns
from actors.session import EventHub
from messages.events import ToolStarted

PATH = "sessions/session:s1"


def _names(frames: list[bytes]) -> list[str]:
    """Each SSE frame's ``event:`` name."""
    return [match.group(1).decode() for frame in frames if (match := re.search(rb"^event: (\S+)$", frame, re.M))]


def _data(frame: bytes) -> Any:
    return json.loads(frame.decode().split("data: ", 1)[1])


class TestSlowBrowser:
    """A session feed whose browser stops reading is dropped by the hub and ends with ``resync``."""

    async def test_stalled_reader_never_holds_the_session_back(self) -> None:
        """The session publishes on while the browser is stuck; the relay then says resync and ends."""
        hub = EventHub("s1", PATH, subscriber_capacity=4)
        feed = hub.subscribe("dashboard")
        frames: list[bytes] = []
        unstuck = trio.Event()

        async def emit(frame: bytes) -> None:
            frames.append(frame)
            await unstuck.wait()  # the browser reads nothing more until told

        async with trio.open_nursery() as nursery:
            nursery.start_soon(relay_session, feed, emit)
            await trio.testing.wait_all_tasks_blocked()
            for n in range(20):  # publishing never waits for a subscriber
                hub.publish(ToolStarted, call_id=f"c{n}", name="terminal", args_preview="ls")
            unstuck.set()
        names = _names(frames)
        assert names[-1] == "resync" and "too slow" in _data(frames[-1])["reason"]
        assert names.count("tool_started") <= 5
        assert feed.closed and hub.subscriber_count == 0


class TestStateFeed:
    """The state feed sends the picture when it changes, not on every look, and one look serves every browser."""

    async def test_only_changes_are_sent(self, autojump_clock: trio.testing.MockClock) -> None:
        """Three looks at one picture (only its ages moving) send it once; a changed picture is sent at the next look."""
        pictures = [{"n": 1, "age_seconds": 1.0}, {"n": 1, "age_seconds": 2.0}, {"n": 1, "age_seconds": 3.0}, {"n": 2}]
        sent: list[dict[str, Any]] = []

        async def read() -> dict[str, Any]:
            return pictures.pop(0) if len(pictures) > 1 else pictures[0]

        async def emit(frame: bytes) -> None:
            sent.append(_data(frame))

        with trio.move_on_after(LIVE_INTERVAL_SECONDS * 5.5):
            await stream_state(SharedPicture(read), emit)
        assert [picture["n"] for picture in sent] == [1, 2]

    async def test_browsers_share_one_look(self, autojump_clock: trio.testing.MockClock) -> None:
        """Ten browsers watching for five intervals cost about five looks at the daemon, not fifty."""
        looks = 0

        async def read() -> dict[str, Any]:
            nonlocal looks
            looks += 1
            return {"look": looks}

        async def emit(frame: bytes) -> None:
            pass

        shared = SharedPicture(read)
        with trio.move_on_after(LIVE_INTERVAL_SECONDS * 5.5):
            async with trio.open_nursery() as nursery:
                for _ in range(10):
                    nursery.start_soon(stream_state, shared, emit)
        assert 5 <= looks <= 7


class TestStreamCap:
    """Streams past the cap are refused with a 429, and a closed stream frees its slot."""

    def test_cap(self) -> None:
        """The slot past the limit raises TooManyRuns; releasing one lets the next in."""
        slots = StreamSlots(limit=2)
        slots.take()
        slots.take()
        with pytest.raises(TooManyRuns, match="max 2"):
            slots.take()
        slots.release()
        slots.take()
        assert slots.open == 2
