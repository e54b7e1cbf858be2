"""The Mattermost bot's pure parts: posted events read strictly (threads by root_id, mentions, files),
and the events API's address."""

from __future__ import annotations

import json
from typing import Any

from actors.platform.gateway.port import ChatRef, RemoteFile
from actors.platform.mattermost.events import read_posted
from actors.platform.mattermost.socket import websocket_url

BOT, NAME = "b" * 26, "hermes"


def _data(channel_type: str = "O", **post: Any) -> dict[str, Any]:
    base = {"id": "p" * 26, "user_id": "u" * 26, "channel_id": "c" * 26, "root_id": "", "message": "hi", "type": ""}
    return {"channel_type": channel_type, "sender_name": "@alice", "post": json.dumps({**base, **post})}


class TestPosted:
    """A posted event becomes the gateway's Incoming; anything not a user's words is None."""

    def test_a_dm_a_mention_and_a_thread(self) -> None:
        dm = read_posted(_data("D"), BOT, NAME)
        assert dm is not None and dm.incoming.chat == ChatRef("mattermost", "c" * 26) and dm.incoming.private and dm.incoming.addressed
        assert dm.incoming.user_name == "alice" and dm.post_id == "p" * 26
        mention = read_posted(_data(message="@Hermes what now? mail me@hermes.org"), BOT, NAME)
        assert mention is not None and mention.incoming.addressed and mention.incoming.text == "what now? mail me@hermes.org"
        assert mention.incoming.chat == ChatRef("mattermost", "c" * 26, "p" * 26)  # answered in a thread under it
        reply = read_posted(_data(root_id="r" * 26, message="more"), BOT, NAME)
        assert reply is not None and reply.incoming.chat.thread_id == "r" * 26 and not reply.incoming.addressed
        other = read_posted(_data(message="@hermesbot hello"), BOT, NAME)
        assert other is not None and not other.incoming.addressed  # another user's name that starts the same

    def test_files(self) -> None:
        metadata = {"files": [{"id": "f" * 26, "name": "a.png", "mime_type": "image/png", "size": 3}]}
        posted = read_posted(_data("D", message="", file_ids=["f" * 26, "g" * 26], metadata=metadata), BOT, NAME)
        assert posted is not None
        assert posted.incoming.files == (RemoteFile("image", "f" * 26, "a.png", 3), RemoteFile("document", "g" * 26, "document", None))

    def test_what_is_not_a_users_words(self) -> None:
        for changed in ({"user_id": BOT}, {"type": "system_join_channel"}, {"props": {"from_webhook": "true"}},
                        {"user_id": 5}, {"channel_id": ""}, {"message": "  "}, {"id": None}):
            assert read_posted(_data(**changed), BOT, NAME) is None, changed
        assert read_posted({"post": "{not json"}, BOT, NAME) is None
        assert read_posted({"post": "[1]"}, BOT, NAME) is None
        assert read_posted({}, BOT, NAME) is None


class TestAddress:
    """The events API is the server's own address, as ws:// or wss://."""

    def test_websocket_url(self) -> None:
        assert websocket_url("https://chat.example.org/") == "wss://chat.example.org/api/v4/websocket"
        assert websocket_url("http://127.0.0.1:8065") == "ws://127.0.0.1:8065/api/v4/websocket"
