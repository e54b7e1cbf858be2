"""The outbound registry: destinations parsed strictly, sends reach the connected platform only."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from actors.platform.outbound import (
    Destination,
    OutboundRegistry,
    PlatformNotConnected,
    UnknownDestination,
)


class Recorder:
    """A platform's sending side that keeps what it was given."""

    def __init__(self, platform: str) -> None:
        self.platform = platform
        self.sent: list[tuple[Destination, str, tuple[str, ...]]] = []

    async def deliver(self, destination: Destination, text: str, attachments: Sequence[str] = ()) -> None:
        self.sent.append((destination, text, tuple(attachments)))


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("telegram", Destination("telegram")),
        ("Telegram:-100123", Destination("telegram", "-100123")),
        ("discord:99:11", Destination("discord", "99", "11")),
        ("slack:C0123ABCD", Destination("slack", "C0123ABCD")),
        ("slack:#general", Destination("slack", "#general")),
        ("slack:C0123ABCD:1712345678.000100", Destination("slack", "C0123ABCD", "1712345678.000100")),
    ],
)
def test_destinations_parse_and_print_back(text: str, parsed: Destination) -> None:
    assert Destination.parse(text) == parsed
    assert Destination.parse(str(parsed)) == parsed


@pytest.mark.parametrize("text", ["", ":1", "telegram:", "telegram::1", "a:b:c:d", "slack:foo", "nowhere:123", "telegram:abc", "discord:1:x", "slack:123", "slack:#", "slack:C0123ABCD:x", "discord:#general"])
def test_malformed_destinations_are_refused(text: str) -> None:
    with pytest.raises(UnknownDestination):
        Destination.parse(text)


async def test_delivery_goes_to_the_named_platform_only() -> None:
    registry = OutboundRegistry()
    telegram, discord = Recorder("telegram"), Recorder("discord")
    registry.register(telegram)
    registry.register(discord)
    await registry.deliver("telegram:42", "hello", ["/tmp/a.png"])
    assert telegram.sent == [(Destination("telegram", "42"), "hello", ("/tmp/a.png",))]
    assert discord.sent == []
    assert registry.connected() == ["discord", "telegram"]


async def test_a_stopped_platform_cannot_be_sent_to() -> None:
    registry = OutboundRegistry()
    first, replacement = Recorder("telegram"), Recorder("telegram")
    registry.register(first)
    registry.register(replacement)
    registry.unregister(first)  # a late unregister of the old connection keeps the new one
    await registry.deliver("telegram", "still here")
    assert replacement.sent and not first.sent
    registry.unregister(replacement)
    with pytest.raises(PlatformNotConnected):
        await registry.deliver("telegram", "gone")
