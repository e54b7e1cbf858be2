"""A chat's follower: the session's events, as the chat sees them, while the session is awake.

The follower holds a passive subscription (it never keeps the session from hibernating; when the
session hibernates, the subscription ends and so does the follower; the next message starts another).
It follows every turn of the session, not only those a message of this chat started: a background
process's notification or a queued message gets its answer to the chat too. Per turn it keeps the
typing indicator alive, shows the tools being run in one progress message edited in place, turns
approval and clarify requests into buttons, and sends the final answer with its ``MEDIA:`` files (an
interrupted turn says nothing: `/stop` answered for it, or a newer message is being answered).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import attrs
import trio

from actors.platform.gateway.port import ChatPort, ChatRef, Choice, SentMessage
from markup import extract_media
from actors.platform.outbound import DeliveryFailed
from actors.session import SubscriptionClosed
from messages.events import (
    ApprovalRequested,
    ClarifyRequested,
    RequestResolved,
    SessionEvent,
    SubscriberDropped,
    ToolStarted,
    TurnFinished,
    TurnStarted,
)
from messages.session import CheckFiles, EventFeed, FileCheck

__all__ = ["APPROVAL_LABELS", "ChatFollower", "PendingRequest", "button_data", "parse_button", "session_tag"]

log = logging.getLogger("hermes_actors.platform.gateway")

T = TypeVar("T")

#: How often the typing indicator is refreshed (platforms show it for about five seconds).
TYPING_EVERY = 4.0
#: How long a turn runs before the typing indicator is shown: a quick answer is its own feedback, and
#: sparing it the indicator's request keeps that request off the answer's path.
TYPING_AFTER = 0.5
#: Tool lines a progress message keeps (the latest ones).
PROGRESS_LINES = 12
APPROVAL_LABELS = {"once": "Allow once", "session": "Allow for this session", "always": "Always allow", "deny": "Deny"}


def session_tag(session_id: str) -> str:
    """A short tag of a session for button data (request ids are numbered per session, and one group
    chat may hold a session per user)."""
    return hashlib.sha256(session_id.encode()).hexdigest()[:10]


def button_data(session_id: str, request_id: str, choice_index: int) -> str:
    """A button's data: the session, the request and the index of its choice (Telegram allows 64 bytes)."""
    return f"r:{session_tag(session_id)}:{request_id}:{choice_index}"


def parse_button(data: str) -> tuple[str, str, int] | None:
    """The session tag, request id and choice index of a button's data; None for data the gateway
    never sent."""
    kind, _, rest = data.partition(":")
    tag, _, rest = rest.partition(":")
    request_id, _, index = rest.rpartition(":")
    if kind != "r" or not tag or not request_id or not index.isdigit():
        return None
    return tag, request_id, int(index)


@attrs.define
class PendingRequest:
    """An approval or clarify request shown in the chat: its choices and the message with its buttons."""

    request_id: str
    kind: str
    text: str
    choices: list[str]
    message: SentMessage | None = None


class ChatFollower:
    """Relays one session's events to one chat; :meth:`run` until the session sleeps or stops.

    Args:
        port: the platform.
        chat: where to send.
        session_id: the followed session (events relayed from its subagents carry theirs, and are skipped).
        subscription: a passive subscription to the session.
        check_files: asks the session which reply attachments its policy lets out.
        tool_progress: show a progress message of the tools a turn runs.
    """

    def __init__(
        self,
        port: ChatPort,
        chat: ChatRef,
        session_id: str,
        subscription: EventFeed,
        check_files: Callable[[CheckFiles], Awaitable[list[FileCheck]]],
        *,
        tool_progress: bool,
    ) -> None:
        self.port = port
        self.chat = chat
        self.session_id = session_id
        self.subscription = subscription
        self.check_files = check_files
        self.tool_progress = tool_progress
        self.pending: dict[str, PendingRequest] = {}
        self._typing: trio.CancelScope | None = None
        self._progress: SentMessage | None = None
        self._progress_lines: list[str] = []

    def pending_of(self, kind: str) -> PendingRequest | None:
        """The oldest request of ``kind`` (approval, clarify) still waiting in this chat."""
        return next((request for request in self.pending.values() if request.kind == kind), None)

    async def run(self) -> None:
        """Follow until the subscription ends."""
        async with trio.open_nursery() as nursery:
            try:
                while True:
                    event = await self.subscription.receive()
                    if isinstance(event, SubscriberDropped):
                        log.warning("%s chat %s: the session dropped its follower: %s", self.chat.platform, self.chat.chat_id, event.reason)
                        return
                    await self._on(event, nursery)
            except SubscriptionClosed:
                return
            finally:
                self.subscription.close()
                nursery.cancel_scope.cancel()

    async def _on(self, event: SessionEvent, nursery: trio.Nursery) -> None:
        if event.session_id != self.session_id:
            return
        match event:
            case TurnStarted():
                self._progress, self._progress_lines = None, []
                if self._typing is None:
                    self._typing = trio.CancelScope()
                    nursery.start_soon(self._keep_typing, self._typing)
            case ToolStarted(name=name, args_preview=preview, emoji=emoji) if self.tool_progress:
                await self._show_progress(f"{emoji or '⚙️'} {name}: {preview[:80]}".rstrip(": "))
            case ApprovalRequested(request_id=request_id, command=command, description=description, choices=choices):
                text = f"⚠️ Approval needed: {description}\n\n{command}"
                await self._ask(PendingRequest(request_id, "approval", text, list(choices)), APPROVAL_LABELS)
            case ClarifyRequested(request_id=request_id, question=question, choices=choices, allow_freetext=free):
                text = f"❓ {question}" + ("\n\n(Or reply with your own answer.)" if free and choices else "")
                await self._ask(PendingRequest(request_id, "clarify", text, list(choices)), {})
            case RequestResolved(request_id=request_id, answer=answer, resolved_by=by):
                request = self.pending.pop(request_id, None)
                if request is not None and request.message is not None:
                    await self._quietly(self.port.edit_text(request.message, f"{request.text}\n\n→ {answer} ({by})"))
            case TurnFinished(final_text=text, reason=reason, error=error):
                if self._typing is not None:
                    self._typing.cancel()
                    self._typing = None
                await self._answer(text, reason, error)

    async def _keep_typing(self, scope: trio.CancelScope) -> None:
        with scope:
            await trio.sleep(TYPING_AFTER)
            while True:
                await self._quietly(self.port.typing(self.chat))
                await trio.sleep(TYPING_EVERY)

    async def _show_progress(self, line: str) -> None:
        self._progress_lines = [*self._progress_lines, line][-PROGRESS_LINES:]
        text = "\n".join(self._progress_lines)
        if self._progress is None:
            self._progress = await self._quietly(self.port.send_text(self.chat, text, markdown=False))
        else:
            await self._quietly(self.port.edit_text(self._progress, text))

    async def _ask(self, request: PendingRequest, labels: dict[str, str]) -> None:
        self.pending[request.request_id] = request
        choices = [
            Choice(labels.get(choice, choice), button_data(self.session_id, request.request_id, i))
            for i, choice in enumerate(request.choices)
        ]
        if choices:
            request.message = await self._quietly(self.port.send_choices(self.chat, request.text, choices))
        else:
            request.message = await self._quietly(self.port.send_text(self.chat, request.text, markdown=False))

    async def _answer(self, text: str, reason: str, error: str | None) -> None:
        if reason == "interrupted":
            return  # superseded: /stop said so, or a newer message is being answered
        body, media = extract_media(text)
        if reason == "error":
            body = f"{body}\n\n(The turn failed: {error})" if body else f"The turn failed: {error}"
        elif not body and reason != "completed":
            body = f"({reason})"
        if body:
            await self._quietly(self.port.send_text(self.chat, body, markdown=True))
        if media:
            checks = await self.check_files(CheckFiles(tuple(media)))
            for check in checks:
                if check.host_path is None:
                    log.warning("%s chat %s: attachment %s not sent: %s", self.chat.platform, self.chat.chat_id, check.path, check.refusal)
                    await self._quietly(self.port.send_text(self.chat, f"(Not attached: {check.path}: {check.refusal})", markdown=False))
                else:
                    await self._quietly(self.port.send_file(self.chat, Path(check.host_path)))

    async def _quietly(self, sending: Awaitable[T]) -> T | None:
        """Await a send; a platform failure is logged, never raised (the follower goes on)."""
        try:
            return await sending
        except DeliveryFailed as exc:
            log.warning("%s chat %s: %s", self.chat.platform, self.chat.chat_id, exc)
            return None
