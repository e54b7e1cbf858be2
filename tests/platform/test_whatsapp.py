"""The WhatsApp bot's parts: webhook events read strictly (messages, presses, files, failures of the bot's own
messages), WhatsApp's formatting and its 4,096-character split, the events' signature, and Graph's errors."""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

import pytest

from actors.platform.gateway.port import ChatRef, RemoteFile
from actors.platform.gateway.transport import platform_client
from actors.platform.whatsapp.events import read_event
from actors.platform.whatsapp.graph import GraphClient, GraphError, GraphTokenRefused, WindowClosed
from actors.platform.whatsapp.webhook import signature
from markup import to_whatsapp, whatsapp_chunks
from tests.platform.whatsapp_fake import PHONE_ID, TOKEN, event, fake_graph, pressed, text

USER = "15551230001"


def _one(message: dict[str, Any]) -> Any:
    found = read_event(event(message), PHONE_ID)
    assert found.skipped == 0, found
    return found.received


class TestEvents:
    """An event becomes the gateway's Incoming (every chat a direct one); what is not a user's words is skipped."""

    def test_text_and_names(self) -> None:
        [received] = _one(text(USER, "  hello  ", "wamid.A"))
        incoming = received.incoming
        assert incoming.chat == ChatRef("whatsapp", USER) and incoming.private and incoming.addressed
        assert (incoming.text, incoming.user_id, incoming.user_name, received.message_id) == ("hello", USER, "User 0001", "wamid.A")
        assert received.pressed is None

    def test_presses(self) -> None:
        [button] = _one(pressed(USER, "ab12:r1:0", "Allow once"))
        [row] = _one(pressed(USER, "ab12:r1:3", "Deny", row=True))
        assert (button.pressed, row.pressed) == ("ab12:r1:0", "ab12:r1:3")
        template = {"from": USER, "id": "wamid.T", "type": "button", "button": {"text": "Yes", "payload": "yes-1"}}
        [quick] = _one(template)
        assert quick.pressed is None and quick.incoming.text == "Yes"  # a template's button: the user's words

    def test_files(self) -> None:
        voice = {"from": USER, "id": "wamid.V0000000000001", "type": "audio", "audio": {"id": "123", "mime_type": "audio/ogg; codecs=opus", "voice": True}}
        document = {"from": USER, "id": "wamid.D", "type": "document", "document": {"id": "456", "filename": "a.pdf", "caption": "see"}}
        sticker = {"from": USER, "id": "wamid.S", "type": "sticker", "sticker": {"id": "789", "mime_type": "image/webp"}}
        [v] = _one(voice)
        [d] = _one(document)
        [s] = _one(sticker)
        assert v.incoming.files == (RemoteFile("voice", "123", "voice-000000000001.ogg"),) and v.incoming.text == ""
        assert d.incoming.files == (RemoteFile("document", "456", "a.pdf"),) and d.incoming.text == "see"
        assert s.incoming.files[0].kind == "image"

    def test_location_as_words(self) -> None:
        [place] = _one({"from": USER, "id": "wamid.L", "type": "location", "location": {"latitude": 1.5, "longitude": 2, "name": "Home"}})
        assert place.incoming.text == "[Location: 1.5, 2 (Home)]"

    def test_what_is_not_a_users_words(self) -> None:
        for message in ({"from": USER, "id": "wamid.R", "type": "reaction", "reaction": {"emoji": "👍"}},
                        {"from": USER, "id": "wamid.E", "type": "text", "text": {"body": "  "}},
                        {"from": USER, "id": "wamid.I", "type": "image", "image": {}}):
            assert read_event(event(message), PHONE_ID).received == (), message
        for broken in ({"from": USER, "type": "text"}, {"id": "wamid.X", "type": "text"}, {"from": "bob", "id": "w", "type": "text"}):
            assert read_event(event(broken), PHONE_ID).skipped == 1, broken
        assert read_event({"object": "page"}, PHONE_ID).skipped == 1
        assert read_event({"object": "whatsapp_business_account", "entry": [{"changes": "no"}]}, PHONE_ID).skipped == 1
        other = read_event(event(text(USER, "hi")), "another-number")
        assert other.received == () and other.other_numbers == 1

    def test_failed_deliveries(self) -> None:
        failed = {"id": "wamid.F", "status": "failed", "recipient_id": USER, "errors": [{"code": 131047, "title": "Re-engagement message"}]}
        delivered = {"id": "wamid.G", "status": "delivered", "recipient_id": USER}
        found = read_event(event(statuses=(failed, delivered)), PHONE_ID)
        [failure] = found.failures
        assert (failure.recipient, failure.message_id, failure.code, failure.title) == (USER, "wamid.F", 131047, "Re-engagement message")


class TestFormatting:
    """Markdown in WhatsApp's marks; long answers split at 4,096 characters, each piece formatted alone."""

    def test_marks(self) -> None:
        markdown = "# Title\n**bold** and *it* and ~~gone~~, `code`, [docs](https://e.com/x) and [https://e.com](https://e.com)\n- a"
        assert to_whatsapp(markdown) == "*Title*\n*bold* and _it_ and ~gone~, `code`, docs (https://e.com/x) and https://e.com\n• a"
        assert to_whatsapp("```py\nx = 1\n```") == "```\nx = 1\n```"
        assert to_whatsapp("| a | b |\n|---|---|\n| 1 | 2 |") == "```\n| a | b |\n|---|---|\n| 1 | 2 |\n```"

    def test_split(self) -> None:
        pieces = whatsapp_chunks("\n\n".join(f"**Part {i}** " + "word " * 300 for i in range(10)))
        assert len(pieces) > 1 and all(len(piece) <= 4096 for piece in pieces)
        assert all(piece.startswith("*Part ") for piece in pieces)


class TestSignature:
    """The X-Hub-Signature-256 value is the app secret's HMAC-SHA256 of the exact bytes, as Meta computes it."""

    def test_signature(self) -> None:
        body = b'{"object":"whatsapp_business_account"}'
        assert signature("secret", body) == "sha256=" + hmac.new(b"secret", body, hashlib.sha256).hexdigest()
        assert signature("secret", body + b" ") != signature("secret", body)


class TestGraphErrors:
    """Graph's answers become named errors: 190 a refused token, 131047 the closed window, a send Graph read
    and left unanswered reported, not made again (against the fake Graph on loopback)."""

    async def test_codes_and_retries(self) -> None:
        with fake_graph() as graph:
            async with platform_client() as http:
                client = GraphClient(graph.url, "v20.0", TOKEN, http, retry_first=0.001)
                graph.closed_windows.add(USER)
                message = {"messaging_product": "whatsapp", "to": USER, "type": "text", "text": {"body": "hi"}}
                with pytest.raises(WindowClosed, match="graph error 131047.*24-hour"):
                    await client.request("POST", f"{PHONE_ID}/messages", message)
                graph.fail_next_send(100)
                with pytest.raises(GraphError, match="HTTP 400 graph error 100") as failed:
                    await client.request("POST", f"{PHONE_ID}/messages", {**message, "to": "15550009999"})
                assert failed.value.code == 100
                graph.fail_next_send(None)
                with pytest.raises(GraphError, match=r"no answer \(RemoteProtocolError\)"):
                    await client.request("POST", f"{PHONE_ID}/messages", {**message, "to": "15550009999"})
                assert len(graph.dropped) == 1  # Graph read it and may have sent it: never made twice
                graph.revoke()
                with pytest.raises(GraphTokenRefused, match="graph error 190") as refused:
                    await client.request("GET", PHONE_ID)
                assert TOKEN not in str(refused.value)
