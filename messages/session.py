"""What a session actor's mailbox takes.

These stay in-process (the control socket carries its own requests and the
daemon turns them into these), so they may hold channels and callables.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol

import attrs

from messages.events import SessionEvent

from messages.request import Request

__all__ = [
    "AnswerRequest",
    "BackgroundNotification",
    "CheckFiles",
    "Compress",
    "EventFeed",
    "FileCheck",
    "Hibernate",
    "Interrupt",
    "ResetTools",
    "SessionMessage",
    "SetYolo",
    "Shutdown",
    "Steer",
    "Subscribe",
    "UserMessage",
]


class EventFeed(Protocol):
    """What :class:`Subscribe` answers: one subscriber's events of a session, in order, until it is
    closed (``async for event in feed``). The session's hub makes them (``actors.session.Subscription``);
    this is their face, so a message can name its reply without importing the actor that makes it.
    """

    @property
    def label(self) -> str:
        """Who subscribed (shown in the session's snapshot)."""
        ...

    @property
    def closed(self) -> bool:
        """True once the subscription ended (detached or dropped)."""
        ...

    @property
    def pending(self) -> int:
        """Events buffered, not yet received."""
        ...

    def close(self) -> None:
        """Detach: no more events are delivered after those already buffered."""
        ...

    async def receive(self) -> SessionEvent:
        """The next event, waiting for one; raises ``SubscriptionClosed`` once closed and drained."""
        ...

    def receive_nowait(self) -> SessionEvent | None:
        """The next buffered event, or None."""
        ...

    def __aiter__(self) -> AsyncIterator[SessionEvent]:
        """The events, until the subscription is closed and drained."""
        ...


@attrs.frozen
class UserMessage(Request[str]):
    """A new message from the user; starts a turn (or follows busy_input_mode).

    ``busy_mode`` overrides ``display.busy_input_mode`` for this message (the HTTP
    API sends ``"queue"``: one client must never interrupt another client's turn).
    ``images`` are host paths of images the user sent (a messaging platform fetched them): they
    reach a vision-capable model as image content. ``system`` is added to the system prompt of the
    turn this message starts, in its requests only (never stored): a chat's ``channel_prompts`` entry.
    """

    text: str
    source: str = "cli"
    busy_mode: str | None = None
    images: tuple[str, ...] = ()
    system: str | None = None


@attrs.frozen
class Interrupt(Request[str]):
    """Cancel the running turn; ``text``, when given, becomes the next user message."""

    text: str | None = None
    requested_by: str = "user"


@attrs.frozen
class Steer(Request[str]):
    """Out-of-band text for the running turn, delivered with the next tool result."""

    text: str


@attrs.frozen
class BackgroundNotification(Request[str]):
    """A background process finished or matched a watch pattern."""

    process_id: str
    text: str


@attrs.frozen
class AnswerRequest(Request[bool]):
    """An answer to a pending approval or clarify request; the first one wins."""

    request_id: str
    answer: str
    answered_by: str = "user"


@attrs.frozen
class Compress(Request[str]):
    """Compress the context now, optionally focused on ``topic``."""

    topic: str | None = None


@attrs.frozen
class ResetTools(Request[list[str]]):
    """Rebuild the session's frozen tool list from the registry now (``/reset-tools``).

    The list is otherwise fixed for the session's life so the provider's prompt
    cache stays valid; this is the explicit way to pick up changed tools.
    """


@attrs.frozen
class SetYolo(Request[bool]):
    """Turn the session's ``--yolo`` toggle on or off: approve every dangerous command without
    asking (the hardline blocklist is still refused). The reply is the new state."""

    enabled: bool
    requested_by: str = "user"


@attrs.frozen
class Subscribe(Request["EventFeed"]):
    """Start receiving events; replay from ``since`` (exclusive) when given.

    A ``passive`` subscriber (a messaging platform's chat follower) does not keep an idle session
    awake: the session hibernates as if it were not there, ending its subscription.

    With ``running_turn`` (and no ``since``), a turn running now is shown from its start: its
    ``TurnStarted``, its answer text so far (one ``TextDelta``) and its running tools' ``ToolStarted``
    come first (a person's client attaching mid-turn). Subscribers that wait for a turn of their own leave it off.

    The reply is a subscription whose receive side yields events; closing it (detaching)
    is the subscriber's own act, so no message undoes this one.
    """

    label: str
    since: int | None = None
    passive: bool = False
    running_turn: bool = False


@attrs.frozen
class Hibernate(Request[bool]):
    """From the sessions supervisor: leave memory if still idle. Decided in mailbox order, so a
    subscription or a message that came before it keeps the session; the answer is True (the session
    ends, refusing later messages, which wake it anew) or False (it stays)."""


@attrs.frozen
class Shutdown(Request[bool]):
    """Stop the session after interrupting its turn; ``reason`` is recorded."""

    reason: str


@attrs.frozen
class CheckFiles(Request["list[FileCheck]"]):
    """Which of ``paths`` (as the session's tools name them) its tools may read, and where each is on the
    host; the reply is a :class:`FileCheck` per path, in order. For files a reply attaches (``MEDIA:``):
    a platform sends only what the session's own sandbox policy lets it read."""

    paths: tuple[str, ...]


@attrs.frozen
class FileCheck:
    """One path of :class:`CheckFiles`: its host path when readable as a regular file, else why not."""

    path: str
    host_path: str | None = None
    refusal: str | None = None


SessionMessage = (
    UserMessage
    | Interrupt
    | Steer
    | BackgroundNotification
    | AnswerRequest
    | Compress
    | ResetTools
    | SetYolo
    | Subscribe
    | Hibernate
    | Shutdown
    | CheckFiles
)
