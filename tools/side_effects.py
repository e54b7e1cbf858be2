"""Asking the user before a tool's side effect that outlives the turn (a scheduled job, a message to a
chat), the way a dangerous command is asked about."""

from __future__ import annotations

import trio

from tools.context import ApprovalRequest, ToolContext
from tools.errors import ToolError

__all__ = ["approve_side_effect"]


async def approve_side_effect(ctx: ToolContext, *, tool: str, what: str, description: str, timeout: float, refused: str) -> None:
    """Ask for approval of ``what``; return when granted.

    In a session that cannot ask, ``approvals.mode`` and ``approvals.cron_mode`` decide; a request nobody
    answers within ``timeout`` seconds is denied.

    Raises:
        ToolError: denied (``refused`` starts the text the model reads).
    """
    answer = None
    with trio.move_on_after(timeout):
        answer = await ctx.approve(ApprovalRequest(command=what, description=description, tool=tool))
    if answer is None or answer.decision == "deny":
        by = answer.decided_by if answer is not None else f"nobody: no answer within {timeout:g} s"
        raise ToolError(f"{refused} was denied by {by}. Do not retry; ask the user.")
