"""The Signal bot's parts: the event stream read as the standard says, envelopes read strictly (direct
chats, groups, mentions, replies, files), Markdown as Signal's text styles, destinations, and the JSON-RPC
client's rate limits against the fake signal-cli."""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest

from actors.platform.gateway.port import ChatRef, RemoteFile
from actors.platform.outbound import Destination, UnknownDestination
from actors.platform.signal.bot import signal_chat
from actors.platform.signal.client import SignalClient, SignalError, SignalRateLimited
from actors.platform.signal.events import ServerSentEvent, SseReader, read_envelope, well_formed
from markup.signal import StyledText, signal_chunks, to_signal
from tests.platform.signal_fake import ACCOUNT, FakeSignal, fake_signal

BOTS = frozenset({ACCOUNT})
USER = "+15551234567"


def _data(message: dict[str, Any] | None = None, **envelope: Any) -> str:
    base = {"sourceNumber": USER, "sourceUuid": "u-1", "sourceName": "Alice", "timestamp": 17}
    return json.dumps({"envelope": {**base, "dataMessage": {"message": "hi", **(message or {})}, **envelope}, "account": ACCOUNT})


class TestStream:
    """Lines become events: id, type and data, a blank line ending each; keep-alives are nothing."""

    def test_events(self) -> None:
        reader = SseReader()
        lines = [":", "id:17-1", "event:receive", 'data:{"a":1}', "", ":", "data: one", "data:two", "", ""]
        events = [e for e in map(reader.line, lines) if e is not None]
        assert events == [ServerSentEvent("17-1", "receive", '{"a":1}'), ServerSentEvent(None, "message", "one\ntwo")]


class TestEnvelopes:
    """A receive event becomes the gateway's Incoming; anything not a user's words is None."""

    def test_a_direct_chat_a_group_mention_and_a_reply(self) -> None:
        dm = read_envelope(_data(), ACCOUNT, BOTS)
        assert dm is not None and dm.incoming.chat == ChatRef("signal", USER) and dm.incoming.private and dm.incoming.addressed
        assert dm.incoming.user_name == "Alice" and (dm.author, dm.timestamp) == (USER, 17)
        mention = {"message": "\ufffc what now?", "groupInfo": {"groupId": "G1=="},
                   "mentions": [{"number": ACCOUNT, "start": 0, "length": 1}]}
        group = read_envelope(_data(mention), ACCOUNT, BOTS)
        assert group is not None and group.incoming.chat == ChatRef("signal", "group:G1==") and not group.incoming.private
        assert group.incoming.addressed and group.incoming.text == "what now?"
        chatter = read_envelope(_data({"message": "hello \ufffc", "groupInfo": {"groupId": "G1=="},
                                       "mentions": [{"number": "+15550009999", "start": 6, "length": 1}]}), ACCOUNT, BOTS)
        assert chatter is not None and not chatter.incoming.addressed and chatter.incoming.text == "hello @+15550009999"
        reply = read_envelope(_data({"groupInfo": {"groupId": "G1=="}, "quote": {"id": 5, "author": ACCOUNT}}), ACCOUNT, BOTS)
        assert reply is not None and reply.incoming.addressed and reply.quote_id == 5

    def test_note_to_self(self) -> None:
        """The owner's Note to Self, from their phone, is a direct chat; the account's other sync messages are not."""
        sent = {"destinationNumber": ACCOUNT, "timestamp": 17, "message": "remind me"}
        data = json.dumps({"envelope": {"sourceNumber": ACCOUNT, "timestamp": 17, "syncMessage": {"sentMessage": sent}}, "account": ACCOUNT})
        note = read_envelope(data, ACCOUNT, BOTS)
        assert note is not None and note.note_to_self and note.incoming.chat == ChatRef("signal", ACCOUNT) and note.incoming.private
        for other in ({**sent, "destinationNumber": USER}, {**sent, "groupInfo": {"groupId": "G1=="}}):
            data = json.dumps({"envelope": {"sourceNumber": ACCOUNT, "timestamp": 17, "syncMessage": {"sentMessage": other}}})
            assert read_envelope(data, ACCOUNT, BOTS) is None, other
        assert read_envelope(_data(sourceNumber=ACCOUNT), ACCOUNT, BOTS) is None  # the account's own message elsewhere

    def test_files(self) -> None:
        attachments = [{"id": "a1", "contentType": "image/png", "filename": "a.png", "size": 3},
                       {"id": "a2", "contentType": "audio/aac", "size": 9}, {"contentType": "text/plain"}]
        message = read_envelope(_data({"message": None, "attachments": attachments}), ACCOUNT, BOTS)
        assert message is not None
        assert message.incoming.files == (RemoteFile("image", "a1", "a.png", 3), RemoteFile("voice", "a2", "voice.aac", 9))

    def test_what_is_not_a_users_words(self) -> None:
        for changed in ({"sourceNumber": ACCOUNT}, {"timestamp": "x"}, {"sourceNumber": "", "sourceUuid": "", "source": ""}):
            assert read_envelope(_data(**changed), ACCOUNT, BOTS) is None, changed
        for message in ({"message": "  "}, {"reaction": {"emoji": "👍"}}):
            assert read_envelope(_data(message), ACCOUNT, BOTS) is None, message
        assert read_envelope(json.dumps({"envelope": {"sourceNumber": USER, "timestamp": 1, "typingMessage": {}}}), ACCOUNT, BOTS) is None
        assert read_envelope(_data().replace(ACCOUNT, "+15550000002"), ACCOUNT, BOTS) is None  # another account's
        for bad in ("{not json", "[1]", "{}"):
            assert read_envelope(bad, ACCOUNT, BOTS) is None and not well_formed(bad)
        assert well_formed(_data())


class TestStyles:
    """Markdown's markers become Signal's styles, counted in UTF-16; long answers split at 8,000."""

    def test_styles(self) -> None:
        assert to_signal("Hello **there**, `x` and *it*") == StyledText("Hello there, x and it", ("6:5:BOLD", "13:1:MONOSPACE", "19:2:ITALIC"))
        assert to_signal("😀 ~~no~~") == StyledText("😀 no", ("3:2:STRIKETHROUGH",))  # the emoji is two UTF-16 units
        assert to_signal("# Title\n- [a](https://x.y)\n\n```py\nx = 1\n```") == StyledText(
            "Title\n• a (https://x.y)\nx = 1", ("0:5:BOLD", "24:5:MONOSPACE"))
        assert to_signal("a **lone marker") == StyledText("a **lone marker")

    def test_split(self) -> None:
        pieces = signal_chunks("\n\n".join(f"Paragraph {i}: " + "words " * 100 for i in range(30)))
        assert len(pieces) == 3 and all(len(piece.text) <= 8_000 for piece in pieces)


class TestDestinations:
    """A Signal destination is a number, an account's uuid, or a group as Hermes writes it."""

    def test_forms(self) -> None:
        group = "Zm9vYmFyYmF6cXV4cXV1eHh4eHh4eHh4eHh4eHh4eHg="
        assert Destination.parse(f"signal:{USER}") == Destination("signal", USER)
        assert Destination.parse(f"signal:group:{group}") == Destination("signal", f"group:{group}")
        assert signal_chat(f"group:{group}") == signal_chat(f"group.{group}") == f"group:{group}"
        assert signal_chat("b0b0b0b0-0000-4000-8000-000000000001") == "b0b0b0b0-0000-4000-8000-000000000001"
        for bad in ("signal:bob", "signal:15551234567", "signal:group:", f"signal:{USER}:5"):
            with pytest.raises(UnknownDestination):
                Destination.parse(bad)
        assert signal_chat("bob") is None


@pytest.fixture
def fake() -> Iterator[FakeSignal]:
    with fake_signal() as running:
        yield running


class TestClient:
    """A rate limit is waited out as signal-cli says; one asking for a captcha, or a refused recipient, is named."""

    async def test_rate_limits(self, fake: FakeSignal, caplog: pytest.LogCaptureFixture) -> None:
        async with httpx2.AsyncClient() as http:
            client = SignalClient(fake.url, ACCOUNT, http)
            fake.fail_next("send", {"code": -5, "message": "Failed: [429] Rate limit exceeded: Retry after 0.05 seconds", "data": None})
            result = await client.call("send", recipient=[USER], message="hi")
            assert result["results"][0]["type"] == "SUCCESS" and client.rate_limited == 1 and client.waited > 0
            fake.fail_next("send", {"code": -5, "message": "Rate limit", "data": {"response": {"results": [
                {"type": "RATE_LIMIT_FAILURE", "token": "tok-9", "retryAfterSeconds": 86400}]}}})
            with caplog.at_level(logging.ERROR, "hermes_actors.signal"), pytest.raises(SignalRateLimited):
                await client.call("send", recipient=[USER], message="hi")
            assert "submitRateLimitChallenge --challenge tok-9" in caplog.text and client.proof_required == 1
            fake.fail_next("getAttachment", {"code": -1, "message": "Attachment not found", "data": None})
            with pytest.raises(SignalError, match="error -1: Attachment not found"):
                await client.call("getAttachment", id="x")
            assert [c["account"] for c in fake.calls] == [ACCOUNT] * 4
            fake.attachments["big"] = b"\x00" * (2 << 20)  # its answer, in base64, is parsed in a thread
            assert base64.b64decode((await client.call("getAttachment", id="big"))["data"]) == fake.attachments["big"]

    async def test_a_send_nobody_got(self, fake: FakeSignal) -> None:
        """Every recipient failed: named (a rate-limited one waits and tries again)."""
        fake.answer_next("send", {"timestamp": 1, "results": [{"type": "RATE_LIMIT_FAILURE", "retryAfterSeconds": 0.01}]})
        fake.answer_next("send", {"timestamp": 2, "results": [{"type": "UNREGISTERED_FAILURE"}]})
        async with httpx2.AsyncClient() as http:
            client = SignalClient(fake.url, ACCOUNT, http)
            with pytest.raises(SignalError, match="not delivered \\(UNREGISTERED_FAILURE\\)"):
                await client.call("send", recipient=[USER], message="hi")
            assert client.rate_limited == 1
