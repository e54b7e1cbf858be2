"""The session's own events, told to the user's hooks (``hooks``), with Hermes's names and fields.

- ``on_session_start``: before a session's first turn (``session_id``, ``model``, ``platform``).
- ``pre_llm_call``: as each turn starts (``turn_id``, ``user_message``, ``is_first_turn`` ...), in the turn's
  job, so an interrupt stops a hook that hangs. An answer's ``context`` is added to the turn's user message in
  the turn's requests (as Hermes adds it), never to the stored history.
- ``post_llm_call``: a turn ended with a reply (``assistant_response``); ``on_session_end``: any turn ended
  (``completed``, ``interrupted``), as Hermes fires it at the end of every run. Both before the session
  publishes ``TurnFinished``.
- ``pre_approval_request`` / ``post_approval_response``: around asking the user to approve a command
  (``command``, ``description``; then ``choice`` and ``decided_by``).

Apart from that context, the hooks only watch: their answers are ignored and what they do wrong is logged
(``tools.hooks``).
The conversation's history is not passed (Hermes's ``conversation_history``): a command would read it all
on stdin at every turn.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from actors.session.options import SessionOptions
from messages.chat import Content, content_text
from tools.context import ApprovalAnswer, ApprovalRequest
from tools.hooks import HookRunner, context_of

__all__ = ["AskApproval", "approval_with_hooks", "turn_ended", "turn_started"]

AskApproval = Callable[[ApprovalRequest], Awaitable[ApprovalAnswer]]


def _session_fields(session_id: str, options: SessionOptions, model: str) -> dict[str, Any]:
    return {"session_id": session_id, "model": model, "platform": options.source}


async def turn_started(
    hooks: HookRunner, session_id: str, options: SessionOptions, model: str, turn_id: int, message: Content
) -> str | None:
    """Tell ``on_session_start`` (a first turn) and ``pre_llm_call`` hooks that a turn starts; the context
    the ``pre_llm_call`` hooks answered, joined by blank lines (None: none)."""
    first = turn_id == 1
    if first and hooks.wants("on_session_start"):
        await hooks.notify("on_session_start", _session_fields(session_id, options, model), options.cwd)
    if not hooks.wants("pre_llm_call"):
        return None
    fields = {
        **_session_fields(session_id, options, model), "task_id": "", "turn_id": turn_id,
        "user_message": content_text(message), "is_first_turn": first,
    }
    answers = await hooks.notify("pre_llm_call", fields, options.cwd)
    contexts = [text for text in map(context_of, answers) if text is not None]
    return "\n\n".join(contexts) if contexts else None


async def turn_ended(
    hooks: HookRunner, session_id: str, options: SessionOptions, model: str, turn_id: int, message: Content,
    reason: str, final_text: str,
) -> None:
    """Tell ``post_llm_call`` (a turn that replied) and ``on_session_end`` hooks that a turn ended."""
    completed = reason == "completed"
    base = {**_session_fields(session_id, options, model), "task_id": "", "turn_id": turn_id}
    if completed and final_text and hooks.wants("post_llm_call"):
        fields = {**base, "user_message": content_text(message), "assistant_response": final_text}
        await hooks.notify("post_llm_call", fields, options.cwd)
    if hooks.wants("on_session_end"):
        fields = {**base, "completed": completed, "interrupted": reason == "interrupted"}
        await hooks.notify("on_session_end", fields, options.cwd)


def approval_with_hooks(hooks: HookRunner, ask: AskApproval, session_id: str, cwd: str) -> AskApproval:
    """``ask``, with the approval hooks told before the user is asked and once they answered
    (``ask`` itself when no approval hook is configured)."""
    if not (hooks.wants("pre_approval_request") or hooks.wants("post_approval_response")):
        return ask

    async def asking(request: ApprovalRequest) -> ApprovalAnswer:
        fields = {
            "command": request.command, "description": request.description, "pattern_key": request.description,
            "pattern_keys": [request.description], "session_key": session_id, "session_id": session_id,
            "tool_name": request.tool, "surface": "user",
        }
        if hooks.wants("pre_approval_request"):
            await hooks.notify("pre_approval_request", fields, cwd)
        answer = await ask(request)
        if hooks.wants("post_approval_response"):
            await hooks.notify(
                "post_approval_response", {**fields, "choice": answer.decision, "decided_by": answer.decided_by}, cwd
            )
        return answer

    return asking
