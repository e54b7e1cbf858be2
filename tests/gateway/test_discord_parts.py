"""Discord's parts without a network: events read into the gateway's terms, routes grouped as Discord
counts them, and the rate-limit book's waits on Trio's clock."""

from __future__ import annotations

from typing import Any

import httpx2
import trio

from actors.platform.discord.events import BotUser, read_interaction, read_message
from actors.platform.discord.rest import RateLimits, route_key
from actors.platform.gateway.port import ChatRef, RemoteFile

BOT = BotUser("900", "hermes")


def message(content: str = "hi", **extra: Any) -> dict[str, Any]:
    return {"id": "1", "channel_id": "55", "content": content, "author": {"id": "7", "username": "ada", "global_name": "Ada"},
            "mentions": [], "attachments": [], **extra}


class TestEvents:
    def test_a_dm_and_a_guild_mention(self) -> None:
        dm = read_message(message("hello"), BOT)
        assert dm is not None and dm.private and dm.addressed and dm.chat == ChatRef("discord", "55") and dm.user_name == "Ada"
        plain = read_message(message("chat", guild_id="1"), BOT)
        assert plain is not None and not plain.addressed
        mention = read_message(message("<@!900> look", guild_id="1", mentions=[{"id": "900"}]), BOT)
        assert mention is not None and mention.addressed and mention.text == "look"
        reply = read_message(message("yes", guild_id="1", referenced_message={"author": {"id": "900"}}), BOT)
        assert reply is not None and reply.addressed

    def test_attachments_and_what_is_skipped(self) -> None:
        files = [{"url": "https://cdn.example/a.png", "filename": "a.png", "size": 9, "content_type": "image/png"},
                 {"url": "https://cdn.example/b.pdf", "filename": "b.pdf", "size": 3}]
        incoming = read_message(message("", attachments=files), BOT)
        assert incoming is not None and incoming.files == (
            RemoteFile("image", "https://cdn.example/a.png", "a.png", 9), RemoteFile("document", "https://cdn.example/b.pdf", "b.pdf", 3),
        )
        assert read_message(message(author={"id": "8", "bot": True}), BOT) is None
        assert read_message(message(author={"id": "900"}), BOT) is None  # its own
        assert read_message(message("  "), BOT) is None

    def test_only_a_button_press_is_an_interaction(self) -> None:
        press = read_interaction({"type": 3, "channel_id": "55", "member": {"user": {"id": "7"}}, "data": {"custom_id": "r:t:req_1:0"}})
        assert press is not None and press.user_id == "7" and press.data == "r:t:req_1:0"
        assert read_interaction({"type": 2, "channel_id": "55", "user": {"id": "7"}, "data": {"name": "cmd"}}) is None


class TestRateLimits:
    def test_routes_keep_their_major_id(self) -> None:
        assert route_key("POST", "/channels/123456789/messages") == "POST /channels/123456789/messages"
        assert route_key("PATCH", "/channels/123456789/messages/987654321") == "PATCH /channels/123456789/messages/{id}"
        assert route_key("GET", "/gateway/bot") == "GET /gateway/bot"

    async def test_an_empty_bucket_waits_for_its_reset(self, autojump_clock: trio.testing.MockClock) -> None:
        limits = RateLimits()
        route = "POST /channels/1/messages"
        limits.learn(route, httpx2.Headers({"x-ratelimit-bucket": "b", "x-ratelimit-remaining": "0", "x-ratelimit-reset-after": "2.5"}))
        assert limits.delay("POST /channels/2/messages") == 0  # another route, not yet known to share it
        started = trio.current_time()
        await limits.wait(route)
        assert trio.current_time() - started == 2.5 and limits.waited == 2.5
        limits.learn(route, httpx2.Headers({"x-ratelimit-bucket": "b", "x-ratelimit-remaining": "4", "x-ratelimit-reset-after": "1"}))
        assert limits.delay(route) == 0

    async def test_a_global_429_holds_every_route(self, autojump_clock: trio.testing.MockClock) -> None:
        limits = RateLimits()
        limits.limited("POST /channels/1/messages", 3.0, is_global=True)
        assert limits.delay("GET /gateway/bot") == 3.0
        limits.limited("POST /channels/2/messages", 1.0, is_global=False)
        await trio.sleep(3.0)
        assert limits.delay("GET /gateway/bot") == 0 and limits.delay("POST /channels/2/messages") == 0
