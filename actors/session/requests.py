"""Pending approval and clarify requests of one session.

A request waits for the first answer from any attached client, or for its
deadline (an approval then counts as denied, a question as unanswered). While
it waits it stays listed, so a client that attaches later is shown it again.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any, get_args

import attrs
import trio

from actors.session.hub import EventHub
from messages.events import ApprovalRequested, ClarifyRequested, RequestResolved
from tools.context import ApprovalAnswer, ApprovalDecision, ApprovalRequest

if TYPE_CHECKING:
    from config.loader import Config

__all__ = ["APPROVAL_CHOICES", "CLI_SOURCE", "NO_ANSWER", "PendingRequests", "clarify_deadline"]

#: What a clarify request that expired answers with.
NO_ANSWER = ""
#: The answers an approval request offers.
APPROVAL_CHOICES: tuple[ApprovalDecision, ...] = get_args(ApprovalDecision)
#: The source of a session an attached CLI client talks to.
CLI_SOURCE = "cli"


def clarify_deadline(config: Config, source: str) -> float:
    """How long a clarify question of a session from ``source`` waits, as Hermes decides it.

    Hermes's CLI waits ``clarify.timeout`` (120 s: the user is at the terminal); its gateway waits
    ``agent.clarify_timeout`` (an hour: a chat user may step away and still tap the answer later).
    """
    return config.clarify.timeout if source == CLI_SOURCE else config.agent.clarify_timeout


@attrs.define
class _Pending:
    """One request waiting: what was published, and its answer once it has one."""

    event: ApprovalRequested | ClarifyRequested
    answered: trio.Event = attrs.Factory(trio.Event)
    answer: str = NO_ANSWER
    answered_by: str = ""


class PendingRequests:
    """Approval and clarify requests waiting for a person.

    Args:
        hub: where requests and resolutions are published.
        deadline_seconds: how long an approval waits before it expires (``approvals.timeout``).
        clarify_deadline_seconds: how long a question waits (:func:`clarify_deadline`).
    """

    def __init__(self, hub: EventHub, deadline_seconds: float, clarify_deadline_seconds: float) -> None:
        self._hub = hub
        self._deadline = deadline_seconds
        self._clarify_deadline = clarify_deadline_seconds
        self._pending: dict[str, _Pending] = {}
        self._ids = itertools.count(1)

    def __len__(self) -> int:
        return len(self._pending)

    def events(self) -> list[ApprovalRequested | ClarifyRequested]:
        """The requests still waiting, to show again to a client that attaches."""
        return [pending.event for pending in self._pending.values()]

    async def ask_approval(self, request: ApprovalRequest) -> ApprovalAnswer:
        """Wait for once / session / always / deny from a client; denied when the deadline passes."""
        pending = await self._ask(
            ApprovalRequested, "deny", self._deadline, command=request.command, description=request.description,
            choices=list(APPROVAL_CHOICES),
        )
        if pending.answer == NO_ANSWER:
            return ApprovalAnswer("deny", f"nobody: no answer within {self._deadline:g} s (approvals.timeout)")
        # Anything but an exact choice (a typo, a question) is a refusal: running was not agreed to.
        decision: ApprovalDecision = next((choice for choice in APPROVAL_CHOICES if choice == pending.answer), "deny")
        return ApprovalAnswer(decision, pending.answered_by)

    async def ask_clarify(self, question: str, choices: list[str], allow_freetext: bool) -> str | None:
        """Wait for an answer; None when the deadline passes."""
        pending = await self._ask(
            ClarifyRequested, NO_ANSWER, self._clarify_deadline, question=question, choices=list(choices),
            allow_freetext=allow_freetext,
        )
        return pending.answer if pending.answered.is_set() else None

    async def _ask(
        self, cls: type[ApprovalRequested] | type[ClarifyRequested], shown_on_timeout: str, seconds: float, **fields: Any
    ) -> _Pending:
        """Publish a request and wait up to ``seconds`` for its answer; its answer stays :data:`NO_ANSWER`
        (and unset) when the deadline passes (clients are told ``shown_on_timeout``)."""
        request_id = f"req_{next(self._ids)}"
        event = self._hub.publish(cls, request_id=request_id, deadline_seconds=seconds, **fields)
        pending = self._pending[request_id] = _Pending(event)
        deadline = trio.move_on_after(seconds)
        try:
            with deadline:
                await pending.answered.wait()
            return pending
        finally:
            if self._pending.pop(request_id, None) is not None:
                # Expired, or the asking tool was cancelled: clients must drop the prompt.
                by = "nobody in time" if deadline.cancelled_caught else "no one: the turn stopped waiting"
                self._hub.publish(RequestResolved, request_id=request_id, answer=shown_on_timeout, resolved_by=by)

    def answer(self, request_id: str, answer: str, answered_by: str) -> bool:
        """Resolve a request; False when it is unknown or already resolved (first answer wins)."""
        pending = self._pending.pop(request_id, None)
        if pending is None:
            return False
        pending.answer = answer
        pending.answered_by = answered_by
        pending.answered.set()
        self._hub.publish(RequestResolved, request_id=request_id, answer=answer, resolved_by=answered_by)
        return True
