"""``review``: the learning loop's background review of a finished turn, a job under its session.

The session starts it after a turn's ``TurnFinished`` when ``conversation.review`` says one is due, and
never waits for it: the next turn runs beside it. It asks the review's model
(``auxiliary.background_review.model``, else ``auxiliary.model``, else the session's) what is worth keeping, offering only ``memory`` and ``skill_manage``, and runs each call the
model makes through :func:`tools.dispatch.dispatch`, the path every tool call takes, so the tools' own
guards (limits, the threat scan, the SKILL.md format, user skills only) decide what is written. Each
change is logged with its reason (:mod:`tools.learning_log`) and shown to attached clients as a
``StatusUpdate`` of kind ``learning``. It is cancelled with its session (closed, hibernated), abandoned
after ``auxiliary.background_review.timeout`` seconds, and a failure only logs.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any, Final

import attrs
import trio

from actors import Job
from actors.session.context import CallContext, CallProgress, SessionServices
from actors.session.model import SessionModel
from config.loader import Config
from config.providers import BackgroundReviewConfig
from conversation.review import REVIEW_TOOLS, ReviewFocus, review_messages
from conversation.tool_list import FrozenTools
from messages.chat import AssistantMessage, ChatMessage, ToolCall, ToolMessage, content_text
from messages.events import StatusUpdate
from tools.dispatch import dispatch
from tools.memory import DUPLICATE_MESSAGE, MemoryStore
from tools.skills import SkillRoots, SkillSource, discover
from tools.learning_log import LearnedChange, changes_from_call, record_changes
from tools.registry import ToolRegistry

__all__ = ["MAX_REVIEW_STEPS", "ReviewJob", "ReviewPlan", "plan_review"]

log = logging.getLogger("hermes_actors.session.review")

#: Model calls one review may make (Hermes's review fork has a budget too).
MAX_REVIEW_STEPS: Final = 8


@attrs.frozen
class ReviewPlan:
    """What one review is given.

    Attributes:
        request: the messages asking for the review (``conversation.review.review_messages``).
        tools: the definitions of the review tools the session has.
        settings: ``auxiliary.background_review``: its model, if it names one, and its timeout.
        notifications: ``display.memory_notifications``: the line clients get for each change.
    """

    request: Sequence[ChatMessage]
    tools: list[dict[str, Any]]
    settings: BackgroundReviewConfig
    notifications: str = "on"


async def plan_review(
    config: Config, history: Sequence[ChatMessage], focus: ReviewFocus, tools: FrozenTools, services: SessionServices
) -> ReviewPlan:
    """The plan of a review of ``history`` for ``focus``: the memory as it stands and the user's skills read
    now (in a worker thread), the review tools the session has."""

    def read() -> tuple[str, list[str]]:
        memory = MemoryStore(services.home, config.memory).prompt_block_blocking() if focus.memory else ""
        if not focus.skills:
            return memory, []
        workspace = services.jail.policy.host_path(services.jail.policy.workspace)
        catalog = discover(SkillRoots.for_session(services.home, workspace, config.skills.external_dirs))
        return memory, [name for name, skill in catalog.skills.items() if skill.source is SkillSource.USER]

    memory, skill_names = await trio.to_thread.run_sync(read)
    wanted = {"memory"} if focus.memory else set()
    if focus.skills:
        wanted.add("skill_manage")
    return ReviewPlan(
        review_messages(history, focus, memory_now=memory, skill_names=skill_names),
        [d for d in tools.definitions if d["function"]["name"] in wanted],
        config.auxiliary.background_review,
        config.display.memory_notifications,
    )


class ReviewJob(Job[tuple[LearnedChange, ...]]):
    """Runs one review and returns the changes it made (those made so far when interrupted)."""

    kind = "review"

    def __init__(self, plan: ReviewPlan, model: SessionModel, registry: ToolRegistry, services: SessionServices) -> None:
        super().__init__()
        self.plan = plan
        self.model = model
        self.registry = registry
        self.services = services
        self.changes: list[LearnedChange] = []
        # Successful calls whose reason is still to come (the model may explain only in its last reply).
        self._unexplained: list[tuple[str, dict[str, Any]]] = []

    async def execute(self) -> tuple[LearnedChange, ...]:
        self.activity = "reviewing the turn"
        try:
            with trio.move_on_after(self.plan.settings.timeout) as scope:
                await self._converse()
            if scope.cancelled_caught:
                log.warning("session %s: the background review took over %.0f s and was abandoned",
                            self.services.session_id, self.plan.settings.timeout)
        finally:
            # Whatever was written is logged, even when the review is cancelled with its session.
            with trio.CancelScope(shield=True):
                await self._explain("")
        return tuple(self.changes)

    async def interrupted(self) -> tuple[LearnedChange, ...]:
        return tuple(self.changes)

    async def _converse(self) -> None:
        messages = list(self.plan.request)
        for _ in range(MAX_REVIEW_STEPS):
            reply = await self.model.ask_auxiliary(messages, self.plan.tools, self.plan.settings)
            messages.append(reply)
            for call in reply.tool_calls:
                messages.append(await self._call(call))
            reason = content_text(reply.content).strip()
            if reason or not reply.tool_calls:
                await self._explain(reason)
            if not reply.tool_calls:
                return

    async def _call(self, call: ToolCall) -> ToolMessage:
        """One call of the review model, through the one dispatch path, limited to the review tools."""
        try:
            args = json.loads(call.arguments or "{}")
        except ValueError:
            args = call.arguments  # dispatch answers the model that these are not valid arguments
        context = CallContext(self.services, call.id, self, CallProgress())
        reply = await dispatch(self.registry, call.name, args, context, allowed=REVIEW_TOOLS)
        if reply.ok and isinstance(args, dict) and not _unchanged(reply.text):
            self._unexplained.append((call.name, args))
        elif not reply.ok:
            log.info("session %s: a review call of %s was refused: %s", self.services.session_id, call.name,
                     reply.error or reply.text[:200])
        return ToolMessage(call.id, reply.text, name=call.name)

    async def _explain(self, reason: str) -> None:
        """Log the calls waiting for a reason with ``reason`` and tell the attached clients."""
        if not self._unexplained:
            return
        at = datetime.now(timezone.utc).isoformat(timespec="seconds")
        session_id = self.services.session_id
        changes = [
            change
            for name, args in self._unexplained
            for change in changes_from_call(name, args, session_id=session_id, reason=reason, at=at)
        ]
        self._unexplained.clear()
        self.changes.extend(changes)
        try:
            await trio.to_thread.run_sync(record_changes, self.services.home, changes)
        except OSError as exc:
            log.error("session %s: the learning log could not be written: %s", session_id, exc)
        for change in changes:
            line = _announcement(change, self.plan.notifications)
            if line is not None:
                self.services.hub.publish(StatusUpdate, kind="learning", text=line)


def _unchanged(result: str) -> bool:
    """A successful call that changed nothing (memory already held the entry): nothing to log or show."""
    try:
        return bool(json.loads(result).get("message") == DUPLICATE_MESSAGE)
    except (ValueError, AttributeError):
        return False


def _announcement(change: LearnedChange, notifications: str) -> str | None:
    """The line attached clients show for ``change`` under ``display.memory_notifications`` (None: no line)."""
    if notifications == "off":
        return None
    what = change.describe() if notifications == "verbose" else change.headline()
    if change.store == "skill":
        return f"📝 skills updated by review: {what}"
    return f"💾 memory updated by review: {what}"
