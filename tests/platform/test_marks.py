"""The gateway's 👀/✅ acknowledgements (``gateway/marks.py``), with a platform call the test holds."""

from __future__ import annotations

import trio
import trio.testing

from actors.platform.gateway.marks import DONE, WORKING, WorkMarks
from actors.platform.gateway.port import ChatRef

CHAT, OTHER = ChatRef("test", "c1"), ChatRef("test", "c2")


class TestWorkMarks:
    """Each marked message of the answered chat swaps 👀 for ✅, never before its 👀 is placed; other
    chats keep theirs."""

    async def test_an_answer_faster_than_the_mark(self) -> None:
        calls: list[tuple[str, str, str, bool]] = []
        release = trio.Event()

        async def react(chat: ChatRef, message_id: str, emoji: str, add: bool) -> None:
            if emoji == WORKING and add and message_id == "m1":
                await release.wait()  # the platform is slow to place the first 👀
            calls.append((chat.chat_id, message_id, emoji, add))

        async with trio.open_nursery() as nursery:
            marks = WorkMarks(react, nursery.start_soon)
            marks.working(CHAT, "m1")
            marks.working(CHAT, "m2")
            marks.working(OTHER, "m3")
            marks.answered(CHAT)
            await trio.testing.wait_all_tasks_blocked()
            assert ("c1", "m1", WORKING, False) not in calls  # waits for its 👀
            release.set()
        m1 = [call for call in calls if call[1] == "m1"]
        assert m1 == [("c1", "m1", WORKING, True), ("c1", "m1", WORKING, False), ("c1", "m1", DONE, True)]
        assert ("c1", "m2", DONE, True) in calls
        assert [call for call in calls if call[1] == "m3"] == [("c2", "m3", WORKING, True)]
