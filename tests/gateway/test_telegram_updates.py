"""Telegram updates read into the gateway's terms: mentions, replies, files, and what is not a user's."""

from __future__ import annotations

from typing import Any

from actors.platform.gateway.follower import button_data, parse_button, session_tag
from actors.platform.gateway.port import ChatRef, RemoteFile
from actors.platform.telegram.updates import BotIdentity, read_button, read_message

BOT = BotIdentity(42, "hermes_bot")


def message(text: str | None = "hi", *, chat_type: str = "private", **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"message_id": 5, "chat": {"id": -100 if chat_type != "private" else 9, "type": chat_type},
                            "from": {"id": 9, "first_name": "Ada", "last_name": "L"}, **extra}
    if text is not None:
        body["text"] = text
    return body


class TestMessages:
    def test_a_direct_message_is_addressed(self) -> None:
        incoming = read_message(message("hello"), BOT)
        assert incoming is not None
        assert (incoming.chat, incoming.user_id, incoming.user_name) == (ChatRef("telegram", "9"), "9", "Ada L")
        assert incoming.private and incoming.addressed and incoming.text == "hello"

    def test_in_a_group_a_mention_or_a_reply_addresses_the_bot(self) -> None:
        plain = read_message(message("just talking", chat_type="supergroup"), BOT)
        assert plain is not None and not plain.addressed and not plain.private
        mentioned = read_message(message("@Hermes_Bot what now?", chat_type="group"), BOT)
        assert mentioned is not None and mentioned.addressed and mentioned.text == "what now?"
        command = read_message(message("/stop@hermes_bot", chat_type="group"), BOT)
        assert command is not None and command.addressed and command.text == "/stop"
        reply = read_message(message("yes", chat_type="group", reply_to_message={"from": {"id": 42}}), BOT)
        assert reply is not None and reply.addressed
        other = read_message(message("@hermes_bottle hi", chat_type="group"), BOT)
        assert other is not None and other.text == "@hermes_bottle hi"

    def test_a_topic_is_its_own_conversation(self) -> None:
        incoming = read_message(message("hi", chat_type="supergroup", message_thread_id=77, is_topic_message=True), BOT)
        assert incoming is not None and incoming.chat == ChatRef("telegram", "-100", "77")

    def test_files_with_or_without_a_caption(self) -> None:
        photo = message(None, caption="look", photo=[{"file_id": "s", "file_size": 1}, {"file_id": "L", "file_size": 900}])
        incoming = read_message(photo, BOT)
        assert incoming is not None and incoming.text == "look"
        assert incoming.files == (RemoteFile("image", "L", "photo.jpg", 900),)
        document = message(None, document={"file_id": "d", "file_name": "scan.png", "mime_type": "image/png"})
        voice = message(None, voice={"file_id": "v", "file_size": 3})
        assert read_message(document, BOT).files == (RemoteFile("image", "d", "scan.png", None),)  # type: ignore[union-attr]  # not None here, or the assertion fails, as it should
        assert read_message(voice, BOT).files == (RemoteFile("voice", "v", "voice.ogg", 3),)  # type: ignore[union-attr]  # not None here, or the assertion fails, as it should

    def test_what_is_not_a_users_message(self) -> None:
        assert read_message(message(None), BOT) is None  # neither text nor file
        assert read_message(message("   "), BOT) is None
        assert read_message({**message("hi"), "from": {"id": 7, "is_bot": True}}, BOT) is None
        assert read_message({"text": "hi", "from": {"id": 1}}, BOT) is None  # no chat


class TestButtons:
    def test_a_press_round_trips_its_data(self) -> None:
        data = button_data("tg-0123456789abcdef01234567-a1b2c3", "req_1234", 2)
        assert len(data.encode()) <= 64
        assert parse_button(data) == (session_tag("tg-0123456789abcdef01234567-a1b2c3"), "req_1234", 2)
        press = read_button({"id": "q", "from": {"id": 9}, "message": {"chat": {"id": 9, "type": "private"}}, "data": data})
        assert press is not None and press.chat == ChatRef("telegram", "9") and press.user_id == "9"

    def test_foreign_data_is_refused(self) -> None:
        assert parse_button("x:t:1:2") is None and parse_button("r:t::1") is None and parse_button("r:t:abc:x") is None
        assert parse_button("r::req_1:0") is None
        assert read_button({"id": "q", "from": {"id": 9}, "data": "r:a:1"}) is None  # no message


class TestHostileShapes:
    def test_fields_of_the_wrong_type_are_ignored(self) -> None:
        odd = message("hi", reply_to_message="x", photo=[{"file_id": "p", "file_size": "huge"}])
        incoming = read_message({**odd, "from": {"id": 7, "first_name": "A"}}, BOT)
        assert incoming is not None and incoming.files[0].size is None
        assert read_message({**message("hi"), "from": "someone"}, BOT) is None
        assert read_message({**message("hi"), "chat": ["not", "an", "object"]}, BOT) is None
        assert read_button({"id": "q", "from": 7, "message": "m", "data": "r:t:req_1:0"}) is None
