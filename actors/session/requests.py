"""Pending approval and clarify requests of one session.

A request waits for the first answer from any attached client, or for its
deadline (an approval then counts as denied, a question as unanswered). While
it waits it stays listed, so a client that attaches later is shown it again.
"""

from __future__ import annotations

import itertools
from typing import Any

import attrs
import trio

from actors.session.hub import EventHub
from messages.events import ApprovalRequested, ClarifyRequested, RequestResolved
from tools.context import ApprovalAnswer, ApprovalRequest

__all__ = ["APPROVAL_CHOICES", "NO_ANSWER", "PendingRequests"]

#: What a clarify request that expired answers with.
NO_ANSWER = ""
#: The answers an approval request offers.
APPROVAL_CHOICES = ("once", "session", "always", "deny")


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
        deadline_seconds: how long a request waits before it expires.
    """

    def __init__(self, hub: EventHub, deadline_seconds: float) -> None:
        self._hub = hub
        self._deadline = deadline_seconds
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
            ApprovalRequested, "deny", command=request.command, description=request.description,
            choices=list(APPROVAL_CHOICES), deadline_seconds=self._deadline,
        )
        if pending.answer == NO_ANSWER:
            return ApprovalAnswer("deny", f"nobody: no answer within {self._deadline:g} s (approvals.timeout)")
        # Anything but an exact choice (a typo, a question) is a refusal: running was not agreed to.
        decision = pending.answer if pending.answer in APPROVAL_CHOICES else "deny"
        return ApprovalAnswer(decision, pending.answered_by)  # type: ignore[arg-type]

    async def ask_clarify(self, question: str, choices: list[str], allow_freetext: bool) -> str:
        """Wait for an answer; :data:`NO_ANSWER` when the deadline passes."""
        pending = await self._ask(
            ClarifyRequested, NO_ANSWER, question=question, choices=list(choices),
            allow_freetext=allow_freetext, deadline_seconds=self._deadline,
        )
        return pending.answer

    async def _ask(self, cls: type[Any], shown_on_timeout: str, **fields: Any) -> _Pending:
        """Publish a request and wait for its answer; its answer stays :data:`NO_ANSWER` when the
        deadline passes (clients are told ``shown_on_timeout``)."""
        request_id = f"req_{next(self._ids)}"
        event = self._hub.publish(cls, request_id=request_id, **fields)
        pending = self._pending[request_id] = _Pending(event)
        deadline = trio.move_on_after(self._deadline)
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
