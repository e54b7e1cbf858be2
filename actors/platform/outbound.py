"""Where the daemon's own messages go out: one registry of the connected messaging platforms.

A platform adapter (Telegram, Discord, ...) registers an :class:`Outbound` while it is connected and
unregisters it when it stops. Everything that sends a message on the daemon's initiative, rather than
as the reply to a user's message, goes through :class:`OutboundRegistry`: a cron job's result, the
``send_message`` tool, a background process's notification. A destination is written
``PLATFORM:CHAT`` or ``PLATFORM:CHAT:THREAD`` (``telegram:-1001234``, ``discord:998877:1122``,
``slack:C0123ABCD``, ``slack:#general``, ``slack:C0123ABCD:1712345678.000100``, ``matrix:!room:example.org``,
``matrix:#alias:example.org``, ``signal:+15551234567``, ``signal:group:GROUP_ID``, ``email:someone@example.org``, ``whatsapp:15551234567``), or ``PLATFORM`` alone for that platform's configured home channel.
A platform a plugin adds (``actors.platform.plugins``) is named once the daemon starts it
(:func:`add_platform_names`); its chats and threads are any words without a colon.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol

import attrs

__all__ = [
    "PLATFORMS",
    "DeliveryFailed",
    "Destination",
    "Outbound",
    "OutboundRegistry",
    "PlatformNotConnected",
    "UnknownDestination",
    "add_platform_names",
]


#: The messaging platforms a destination may name.
PLATFORMS = ("telegram", "discord", "slack", "matrix", "mattermost", "signal", "email", "whatsapp")
#: How a chat and a thread are written on platforms whose ids are not numbers: Slack's channel ids
#: (``C0123ABCD``) or names (``#general``), and its threads' timestamps (``1712345678.000100``).
_CHAT_FORMS = {"slack": (re.compile(r"[CGD][A-Z0-9]{8,}|#[a-z0-9][a-z0-9._-]{0,79}"), re.compile(r"\d{1,12}\.\d{1,9}")),
               # Mattermost's channel and post (thread root) ids: 26 lowercase letters and digits.
               "mattermost": (re.compile(r"[a-z0-9]{26}"), re.compile(r"[a-z0-9]{26}")),
               # An email address; a mail thread is never named (a delivery starts a thread of its own).
               "email": (re.compile(r"[^@\s:<>,]+@[^@\s:<>,]+\.[^@\s:<>,]+"), re.compile(r"(?!)")),
               # A WhatsApp chat is the user's phone number (a leading + allowed); there are no threads.
               "whatsapp": (re.compile(r"\+?\d{6,15}"), re.compile(r"(?!)"))}
_NUMBER = re.compile(r"-?\d+")
_WORD = re.compile(r"[^:\s]{1,256}")
# The platforms plugins added: set once, as the daemon starts them (add_platform_names).
_ADDED: frozenset[str] = frozenset()


def add_platform_names(names: Sequence[str]) -> None:
    """Let destinations name the plugins' platforms ``names`` too."""
    global _ADDED
    _ADDED = _ADDED | frozenset(names)
#: A Matrix room is written with its server, whose colon is not a separator here: ``matrix:!room:server``
#: or ``matrix:#alias:server`` (a port after the server too), and then perhaps ``:$event`` for a thread.
_MATRIX = re.compile(r"(?P<chat>[!#][^:\s]+:[A-Za-z0-9.-]+(?::\d{1,5})?)(?::(?P<thread>\$[A-Za-z0-9_+/=.-]+))?")
#: A Signal chat: a number, an account's uuid, or a group by its base64 id (``group:ID`` as Hermes writes it,
#: whose colon is not a separator here, or ``group.ID``); Signal has no threads.
_SIGNAL = re.compile(r"\+[1-9]\d{6,14}|[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}|group[:.][A-Za-z0-9+/=_-]{8,128}")


class UnknownDestination(ValueError):
    """A destination that is not ``PLATFORM[:CHAT[:THREAD]]``, or names no chat where one is needed."""


class PlatformNotConnected(LookupError):
    """The destination's platform is not configured, or not connected right now."""


class DeliveryFailed(RuntimeError):
    """The platform refused the message or could not be reached; the text says why, without secrets."""


@attrs.frozen
class Destination:
    """A parsed destination: the platform's name, and a chat (and thread) or None for its home channel."""

    platform: str
    chat: str | None = None
    thread: str | None = None

    @classmethod
    def parse(cls, text: str) -> Destination:
        """``telegram``, ``telegram:CHAT`` or ``discord:CHAT:THREAD``; raises :class:`UnknownDestination`
        for another form, a platform not of :data:`PLATFORMS`, or a chat or thread not written as its
        platform writes them (a number; Slack's in its own forms), checked here so that a job is refused
        when it is made rather than failing at its first run."""
        parts = text.strip().split(":")
        if parts[0].lower() == "matrix" and len(parts) > 1:
            room = _MATRIX.fullmatch(text.strip().partition(":")[2])
            if room is None:
                raise UnknownDestination(f"a matrix room is !id:server or #alias:server (then :$event for a thread), got {text!r}")
            return cls("matrix", room["chat"], room["thread"])
        if parts[0].lower() == "signal" and len(parts) > 1:
            chat = text.strip().partition(":")[2]
            if _SIGNAL.fullmatch(chat) is None:
                raise UnknownDestination(f"a signal chat is +NUMBER, an account's uuid or group:GROUP_ID, got {text!r}")
            return cls("signal", chat)
        if not parts[0] or len(parts) > 3 or any(not part for part in parts[1:]):
            raise UnknownDestination(f"a destination is PLATFORM[:CHAT[:THREAD]], got {text!r}")
        platform = parts[0].lower()
        if platform not in PLATFORMS and platform not in _ADDED:
            known = ", ".join([*PLATFORMS, *sorted(_ADDED)])
            raise UnknownDestination(f"{parts[0]!r} is not a messaging platform here ({known}), in {text!r}")
        chat_form, thread_form = _CHAT_FORMS.get(platform, (_WORD, _WORD) if platform in _ADDED else (_NUMBER, _NUMBER))
        if any(not form.fullmatch(part) for form, part in zip((chat_form, thread_form), parts[1:], strict=False)):
            what = {"email": "an address (and no thread)"}.get(platform, "a channel id or #name, and a thread's timestamp" if platform in _CHAT_FORMS else "a word" if platform in _ADDED else "a number")
            raise UnknownDestination(f"a {platform} chat or thread is {what}, got {text!r}")
        return cls(platform, *parts[1:])

    def __str__(self) -> str:
        return ":".join(part for part in (self.platform, self.chat, self.thread) if part is not None)


class Outbound(Protocol):
    """A connected platform's sending side, as the rest of the daemon sees it."""

    #: The platform's name in destinations (``telegram``).
    platform: str

    async def deliver(self, destination: Destination, text: str, attachments: Sequence[str] = ()) -> None:
        """Send ``text`` (Markdown, converted to the platform's dialect and split at its limits) and the
        files at ``attachments`` to the destination's chat, or to the home channel when it names none.

        Raises :class:`UnknownDestination` (no chat and no home channel configured) or
        :class:`DeliveryFailed`.
        """
        ...


class OutboundRegistry:
    """The platforms connected now, by name; shared by the adapters and every sender."""

    def __init__(self) -> None:
        self._platforms: dict[str, Outbound] = {}

    def register(self, outbound: Outbound) -> None:
        """Make a connected platform reachable (replacing an earlier registration of the same name)."""
        self._platforms[outbound.platform] = outbound

    def unregister(self, outbound: Outbound) -> None:
        """Forget a platform that stopped, unless another registration has replaced it since."""
        if self._platforms.get(outbound.platform) is outbound:
            del self._platforms[outbound.platform]

    def connected(self) -> list[str]:
        """The names of the platforms that can be sent to now."""
        return sorted(self._platforms)

    async def deliver(self, destination: str | Destination, text: str, attachments: Sequence[str] = ()) -> None:
        """Send to a destination on any connected platform; see :meth:`Outbound.deliver`."""
        target = destination if isinstance(destination, Destination) else Destination.parse(destination)
        outbound = self._platforms.get(target.platform)
        if outbound is None:
            raise PlatformNotConnected(f"platform {target.platform!r} is not connected")
        await outbound.deliver(target, text, attachments)
