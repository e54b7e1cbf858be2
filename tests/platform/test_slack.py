"""The Slack app's pure parts: Markdown as mrkdwn split at Slack's limit, payloads read strictly, and
edits paced to chat.update's rate tier."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.platform.gateway.port import ButtonPress, ChatRef
from markup import SLACK_LIMIT, slack_chunks, to_mrkdwn
from actors.platform.slack.events import read_action, read_command, read_message
from actors.platform.gateway.pacing import EditPacer

BOT = "UBOT00001"


class TestMrkdwn:
    """Markdown becomes Slack's mrkdwn: its own markers, links, escapes, and code left alone."""

    def test_inline_markup(self) -> None:
        assert to_mrkdwn("**bold**, *it*, _it_, ~~gone~~ and `a<b`") == "*bold*, _it_, _it_, ~gone~ and `a&lt;b`"

    def test_links_and_escapes(self) -> None:
        assert to_mrkdwn("[docs](https://x.y/a) & <b> [bad](javascript:x)") == "<https://x.y/a|docs> &amp; &lt;b&gt; bad (javascript:x)"

    def test_blocks(self) -> None:
        text = "# Title\n- one\n> quoted\n\n| a | b |\n|---|---|\n\n```python\nif a < b:\n    pass\n```"
        assert to_mrkdwn(text) == "*Title*\n• one\n>quoted\n\n```\n| a | b |\n|---|---|\n```\n```\nif a &lt; b:\n    pass\n```"

    def test_a_long_answer_is_split_within_the_limit(self) -> None:
        prose = "\n\n".join(f"Paragraph {i} & more: " + "words " * 100 for i in range(100))
        pieces = slack_chunks(prose)  # escapes lengthen the text: a piece that grew past the limit is cut smaller
        assert len(pieces) >= 2 and all(len(piece) <= SLACK_LIMIT for piece in pieces)
        assert "".join(pieces).count("Paragraph") == 100

    @settings(max_examples=50, deadline=None)
    @given(st.text(alphabet="ab<>&*_~`\n #-|[]()", max_size=400), st.integers(min_value=64, max_value=300))
    def test_every_piece_fits(self, text: str, limit: int) -> None:
        assert all(len(piece) <= limit for piece in slack_chunks(text, limit))


class TestEvents:
    """Slack's payloads are read into the gateway's terms; anything not as documented is None."""

    def test_a_dm_and_a_channel_mention(self) -> None:
        dm = read_message({"type": "message", "channel": "D1", "user": "U1", "text": "hi &amp; <https://a.b|a link>", "ts": "1.1", "channel_type": "im"}, BOT)
        assert dm is not None and dm.chat == ChatRef("slack", "D1") and dm.private and dm.addressed
        assert dm.text == "hi & a link (https://a.b)"
        mention = read_message({"type": "message", "channel": "C1", "user": "U1", "text": f"<@{BOT}> help", "ts": "2.2", "channel_type": "channel"}, BOT)
        assert mention is not None and mention.chat == ChatRef("slack", "C1", "2.2") and mention.addressed and mention.text == "help"
        reply = read_message({"type": "message", "channel": "C1", "user": "U1", "text": "more", "ts": "3.3", "thread_ts": "2.2"}, BOT)
        assert reply is not None and reply.chat == ChatRef("slack", "C1", "2.2") and not reply.addressed

    def test_what_is_not_a_users_words(self) -> None:
        base = {"type": "message", "channel": "C1", "user": "U1", "text": "x", "ts": "1.1"}
        for changed in ({"subtype": "message_changed"}, {"bot_id": "B1"}, {"user": BOT}, {"user": ["U1"]}, {"ts": 5}, {"text": " "}, {"channel": None}):
            assert read_message({**base, **changed}, BOT) is None, changed

    def test_a_button_press(self) -> None:
        payload = {"type": "block_actions", "user": {"id": "U1"}, "channel": {"id": "C1"}, "message": {"ts": "9.9", "thread_ts": "2.2"},
                   "actions": [{"value": "r:abc:1:0"}]}
        assert read_action(payload) == ButtonPress(ChatRef("slack", "C1", "2.2"), "U1", "r:abc:1:0")
        assert read_action({**payload, "actions": []}) is None
        assert read_action({**payload, "type": "view_submission"}) is None

    def test_slash_commands(self) -> None:
        def text(command: str, words: str) -> str | None:
            incoming = read_command({"command": command, "text": words, "user_id": "U1", "channel_id": "D1"})
            return incoming.text if incoming is not None else None

        assert text("/hermes", "status") == "/status" and text("/stop", "") == "/stop" and text("/hermes", "hello there") == "hello there"
        assert text("/hermes", "") is None and read_command({"command": "/hermes", "text": "x"}) is None


class TestEditPacer:
    """One message is edited at most once per interval; edits that pile up collapse into the latest."""

    async def test_edits_are_paced_and_collapsed(self, autojump_clock: trio.testing.MockClock) -> None:
        sent: list[tuple[float, str]] = []

        def edit(text: str) -> Callable[[], Awaitable[None]]:
            async def send() -> None:
                sent.append((trio.current_time(), text))
            return send

        async with trio.open_nursery() as nursery:
            pacer = EditPacer(nursery.start_soon, interval=1.2)
            start = trio.current_time()
            for step in range(5):
                await pacer.edit("C1:1.1", edit(f"step {step}"))
            await pacer.edit("C1:2.2", edit("another message"))
        assert [text for _, text in sent] == ["step 0", "another message", "step 4"]
        assert sent[2][0] - start >= 1.2 and pacer.coalesced == 3
