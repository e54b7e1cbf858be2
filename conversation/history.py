"""Invariants of a conversation history, and the repairs that restore them.

A history is a list of :data:`~messages.chat.ChatMessage` (provider extras ride along untouched in each
message's ``extras``). Providers reject a
history that breaks these rules, so every path that edits one — an interrupt, a crash, a compression —
ends by passing :func:`check_alternation`:

- a ``system`` message may only be the first message;
- the first non-system message is a ``user`` message;
- ``user`` and ``assistant`` alternate; ``tool`` messages follow only an assistant message with
  ``tool_calls`` and answer each of its ids exactly once; the message after a tool group is an assistant;
- every tool call is answered before the conversation moves on.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from conversation.errors import HistoryInvariantError
from messages.chat import AssistantMessage, ChatMessage, Content, HumanMessage, SystemMessage, TextPart, ToolMessage

Message = ChatMessage

INTERRUPTED_REPLY = "Operation interrupted."
COMMAND_INTERRUPTED = "[Command interrupted]"
# Shown for a reply lost to a daemon crash or restart, so the model does not assume it answered.
RESTART_REPLY = "[The session stopped before this message was answered.]"

# Key under which the provider layer keeps an assistant turn's Anthropic content blocks (providers/types.py).
ANTHROPIC_CONTENT_KEY = "anthropic_content"


def cancelled_tool_text(name: str) -> str:
    """The tool result recorded for a call that never ran because the user interrupted the turn."""
    return f"[Tool execution cancelled — {name} was skipped due to user interrupt]"


def restart_tool_text(name: str) -> str:
    """The tool result recorded on load for a call whose result was lost to a crash or restart."""
    return f"[Tool execution lost — {name} did not finish before the session stopped]"


def tool_call_ids(message: Message) -> list[str]:
    """The ids of an assistant message's tool calls, in order (empty for any other message)."""
    if not isinstance(message, AssistantMessage):
        return []
    return [call.id for call in message.tool_calls]


def tool_call_names(message: Message) -> dict[str, str]:
    """Map of tool call id to function name for an assistant message."""
    if not isinstance(message, AssistantMessage):
        return {}
    return {call.id: call.name for call in message.tool_calls}


def check_alternation(messages: Sequence[Message], *, allow_pending_tool_calls: bool = False) -> None:
    """Raise :class:`HistoryInvariantError` when ``messages`` breaks the module's rules.

    Args:
        messages: the history to check.
        allow_pending_tool_calls: accept a history whose last tool group is still missing results
            (the state while tool workers run).

    Raises:
        HistoryInvariantError: naming the rule and the index of the first offending message.
    """
    pending: set[str] = set()
    previous: str | None = None
    for index, message in enumerate(messages):
        if isinstance(message, SystemMessage):
            if index != 0:
                raise HistoryInvariantError(f"system message at index {index}; only the first message may be system", index)
        elif isinstance(message, HumanMessage):
            _require_answered(pending, index)
            if previous not in (None, "system", "assistant"):
                raise HistoryInvariantError(f"user message at index {index} follows {previous}", index)
        elif isinstance(message, AssistantMessage):
            _require_answered(pending, index)
            if previous not in ("user", "tool"):
                raise HistoryInvariantError(f"assistant message at index {index} follows {previous or 'nothing'}", index)
            ids = tool_call_ids(message)
            if len(set(ids)) != len(ids):
                raise HistoryInvariantError(f"assistant message at index {index} repeats a tool call id", index)
            pending = set(ids)
        elif isinstance(message, ToolMessage):
            call_id = message.tool_call_id
            if call_id not in pending:
                raise HistoryInvariantError(
                    f"tool message at index {index} answers {call_id!r}, which no preceding assistant call left open", index
                )
            pending.discard(call_id)
        else:
            raise HistoryInvariantError(f"message at index {index} is not a chat message: {message!r}", index)
        previous = message.role
    if pending and not allow_pending_tool_calls:
        raise HistoryInvariantError(f"tool calls never answered: {sorted(pending)}", -1)


def _require_answered(pending: set[str], index: int) -> None:
    if pending:
        raise HistoryInvariantError(f"message at index {index} arrives before tool calls {sorted(pending)} were answered", index)


def is_valid(messages: Sequence[Message], *, allow_pending_tool_calls: bool = False) -> bool:
    """Whether :func:`check_alternation` accepts ``messages``."""
    try:
        check_alternation(messages, allow_pending_tool_calls=allow_pending_tool_calls)
    except HistoryInvariantError:
        return False
    return True


def open_tool_calls(messages: Sequence[Message]) -> list[tuple[str, str]]:
    """``(id, name)`` of the last assistant message's tool calls that have no result yet, in call order."""
    for start in range(len(messages) - 1, -1, -1):
        if isinstance(messages[start], ToolMessage):
            continue
        names = tool_call_names(messages[start])
        answered = {m.tool_call_id for m in messages[start + 1 :] if isinstance(m, ToolMessage)}
        return [(call_id, name) for call_id, name in names.items() if call_id not in answered]
    return []


def close_interrupted_turn(
    messages: Sequence[Message],
    *,
    results: Mapping[str, str] | None = None,
    partial: AssistantMessage | None = None,
) -> list[Message]:
    """Return a copy of ``messages`` made whole after an interrupt, ready for the next user message.

    Args:
        messages: the history as the turn left it; its last tool group may be missing results.
        results: tool call id to the result a cancelled worker handed back (for example
            ``[Command interrupted]`` with the output so far); used as given.
        partial: the assistant message that was streaming when the turn was cancelled. Its text is
            kept only when non-empty; signed thinking blocks are kept, unsigned (partial) ones and
            partial reasoning, text blocks and tool calls are dropped.

    Calls with no result get :func:`cancelled_tool_text`. A history that then ends on a tool or user
    message is closed with the assistant reply ``Operation interrupted.``.
    """
    history: list[Message] = list(messages)
    given = dict(results or {})
    for call_id, name in open_tool_calls(history):
        history.append(ToolMessage(call_id, given.get(call_id, cancelled_tool_text(name)), name))
    if partial is not None:
        kept = _partial_reply(partial)
        if kept is not None and history and isinstance(history[-1], HumanMessage | ToolMessage):
            history.append(kept)
    if history and isinstance(history[-1], HumanMessage | ToolMessage):
        history.append(AssistantMessage(INTERRUPTED_REPLY))
    return history


def _partial_reply(partial: AssistantMessage) -> Message | None:
    text = partial.content
    if not isinstance(text, str) or not text.strip():
        return None
    signed = [block for block in partial.extras.get(ANTHROPIC_CONTENT_KEY) or () if _is_complete_thinking(block)]
    return AssistantMessage(text, extras={ANTHROPIC_CONTENT_KEY: signed} if signed else {})


def _is_complete_thinking(block: Mapping[str, Any]) -> bool:
    """A thinking block the provider will accept back: signed, or redacted (which is always whole)."""
    kind = block.get("type")
    return kind == "redacted_thinking" or (kind == "thinking" and bool(block.get("signature")))


def repair_on_load(messages: Iterable[Message]) -> list[Message]:
    """Return a valid history rebuilt from one that may have been cut short by a crash.

    Repairs, in one forward pass: a system message that is not first is dropped; messages before the
    first user message are dropped; tool messages that answer no open call (or answer one twice) are
    dropped; calls left unanswered get :func:`restart_tool_text`; consecutive user messages are merged;
    an assistant text reply followed by another assistant message is folded into it; a user message
    after a tool result and a trailing user or tool message are preceded/closed by :data:`RESTART_REPLY`. A valid history comes back equal to the input.
    """
    history: list[Message] = []
    pending: dict[str, str] = {}
    for index, message in enumerate(messages):
        if isinstance(message, SystemMessage):
            if index == 0:
                history.append(message)
            continue
        if isinstance(message, ToolMessage):
            call_id = message.tool_call_id
            if call_id in pending:
                del pending[call_id]
                history.append(message)
            continue
        _answer_lost_calls(history, pending)
        last = history[-1] if history else None
        if isinstance(message, HumanMessage):
            if isinstance(last, ToolMessage):
                history.append(AssistantMessage(RESTART_REPLY))
            if isinstance(last, HumanMessage):
                history[-1] = attrs.evolve(last, content=_merge_content(last.content, message.content) or "")
            else:
                history.append(message)
            continue
        if last is None or isinstance(last, SystemMessage):
            continue
        if isinstance(last, AssistantMessage):
            # Only a text reply can precede here (open calls were just answered): fold it into this one.
            history.pop()
            message = attrs.evolve(message, content=_merge_content(last.content, message.content))
        history.append(message)
        pending = tool_call_names(message)
    _answer_lost_calls(history, pending)
    if history and isinstance(history[-1], HumanMessage | ToolMessage):
        history.append(AssistantMessage(RESTART_REPLY))
    return history


def _answer_lost_calls(history: list[Message], pending: dict[str, str]) -> None:
    for call_id, name in pending.items():
        history.append(ToolMessage(call_id, restart_tool_text(name), name))
    pending.clear()


def _merge_content(first: Content | None, second: Content | None) -> Content | None:
    """Join two message contents, as text when both are text, else as a tuple of parts."""
    if first is None or first == "":
        return second
    if second is None or second == "":
        return first
    if isinstance(first, str) and isinstance(second, str):
        return f"{first}\n\n{second}"
    return (*_as_parts(first), *_as_parts(second))


def _as_parts(content: Content) -> tuple[Any, ...]:
    return (TextPart(content),) if isinstance(content, str) else content


def sanitize_tool_pairs(messages: Sequence[Message]) -> list[Message]:
    """Drop tool results whose call is gone and tool calls whose results are gone.

    Used after cutting a history (compression): an assistant message that loses all its calls keeps
    its text, or is dropped when it has none.
    """
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    issued: set[str] = set()
    result: list[Message] = []
    for message in messages:
        if isinstance(message, AssistantMessage) and message.tool_calls:
            kept = tuple(call for call in message.tool_calls if call.id in answered)
            issued.update(call.id for call in kept)
            if len(kept) != len(message.tool_calls):
                if not kept and not message.content:
                    continue
                message = attrs.evolve(message, tool_calls=kept)
        elif isinstance(message, ToolMessage) and message.tool_call_id not in issued:
            continue
        result.append(message)
    return result
