"""What the gateway core needs of a messaging platform, and what a platform hands it.

An adapter (Telegram today; Discord, Slack's Socket Mode or WhatsApp's Cloud API next) turns its
platform's updates into :class:`Incoming` messages and :class:`ButtonPress` es, and implements
:class:`ChatPort` to send, edit and fetch. Everything else (who may talk, sessions per chat, the
commands that act at once, approvals as buttons, replies, attachments) is the gateway's, the same for
every platform.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

import attrs

__all__ = ["ButtonPress", "ChatPort", "ChatRef", "Choice", "GatewaySettings", "Incoming", "RemoteFile", "SentMessage", "file_kind"]


@attrs.frozen
class ChatRef:
    """A conversation on a platform: its chat and, where the platform has them, its thread."""

    platform: str
    chat_id: str
    thread_id: str | None = None


@attrs.frozen
class RemoteFile:
    """A file a user sent, not fetched yet: ``kind`` is image, voice, audio, video or document."""

    kind: str
    file_id: str
    name: str
    size: int | None = None


def file_kind(content_type: str) -> str:
    """A :class:`RemoteFile`'s kind from its MIME type: image, audio, video, or else document."""
    for prefix, kind in (("image/", "image"), ("audio/", "audio"), ("video/", "video")):
        if content_type.startswith(prefix):
            return kind
    return "document"


@attrs.frozen
class Incoming:
    """A user's message as the gateway reads it.

    ``private`` is a direct message; ``addressed`` says the bot was mentioned or replied to (always true
    in a direct message). ``text`` has the mention removed.
    """

    chat: ChatRef
    user_id: str
    user_name: str
    text: str
    private: bool
    addressed: bool
    files: tuple[RemoteFile, ...] = ()


@attrs.frozen
class ButtonPress:
    """A user pressed a button the gateway sent; ``data`` is the button's own data."""

    chat: ChatRef
    user_id: str
    data: str


@attrs.frozen
class Choice:
    """A button: what it says, and the data it sends back."""

    label: str
    data: str


@attrs.frozen
class SentMessage:
    """A message the bot sent, as the platform names it (for editing later)."""

    chat: ChatRef
    message_id: str


class ChatPort(Protocol):
    """One platform's sending and fetching side. Errors are the adapter's own exceptions, derived
    from :class:`~actors.platform.outbound.DeliveryFailed`."""

    #: The platform's name (``telegram``), as in destinations and session sources.
    platform: str

    async def send_text(self, chat: ChatRef, text: str, *, markdown: bool) -> SentMessage:
        """Send ``text`` (Markdown converted to the platform's dialect when ``markdown``), split at the
        platform's limit; the last piece sent."""
        ...

    async def send_choices(self, chat: ChatRef, text: str, choices: list[Choice]) -> SentMessage:
        """Send ``text`` with a row of buttons (or, without buttons, a reply the user can type)."""
        ...

    async def edit_text(self, message: SentMessage, text: str) -> None:
        """Replace a sent message's text (plain), removing its buttons."""
        ...

    async def send_file(self, chat: ChatRef, path: Path) -> None:
        """Send a file as an attachment (a photo when it is an image)."""
        ...

    async def typing(self, chat: ChatRef) -> None:
        """Show the typing indicator once (the platform lets it lapse after a few seconds)."""
        ...

    async def download(self, file: RemoteFile, destination: Path, limit: int) -> int:
        """Fetch ``file`` into ``destination``; its size. Refuses one over ``limit`` bytes."""
        ...


class GatewaySettings(Protocol):
    """The settings every platform's section shares (``platforms.telegram`` ...), read-only: the
    sections are frozen, and the gateway only reads them."""

    @property
    def allow_from(self) -> tuple[str, ...]: ...
    @property
    def group_allow_from(self) -> tuple[str, ...]: ...
    @property
    def group_allowed_chats(self) -> tuple[str, ...]: ...
    @property
    def require_mention(self) -> bool: ...
    @property
    def allowed_channels(self) -> tuple[str, ...]:
        """When set, the only group chats answered (direct messages are never filtered)."""
        ...

    @property
    def free_response_channels(self) -> tuple[str, ...]:
        """Group chats answered without a mention (``*``: all)."""
        ...

    @property
    def mention_patterns(self) -> tuple[str, ...]:
        """Regular expressions a group message matching counts as addressed to the bot."""
        ...

    @property
    def channel_prompts(self) -> Mapping[str, str]:
        """Chat or thread id to the text added to the system prompt of that chat's turns."""
        ...

    @property
    def group_sessions_per_user(self) -> bool: ...
    @property
    def busy_input_mode(self) -> str: ...
    @property
    def tool_progress(self) -> bool: ...

    @property
    def effective_dm_policy(self) -> str:
        """``pairing``, ``allowlist``, ``open`` or ``disabled`` (see ``config.gateway``)."""
        ...

    @property
    def max_file_bytes(self) -> int:
        """The largest file a user may send that is fetched; 0: no cap."""
        ...

    @property
    def cwd(self) -> str | None: ...
    @property
    def sandbox(self) -> str | None: ...
    @property
    def home_channel(self) -> int | str | None: ...
