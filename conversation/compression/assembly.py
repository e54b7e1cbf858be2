"""Phases 3-5 helpers: the summariser's instructions and the rebuilt history (docs/DECISIONS.md#d-compression)."""

from __future__ import annotations

import datetime
from collections.abc import Sequence

import attrs

from conversation.compression.texts import (
    BUDGET_LINE,
    FOCUS_DIRECTIVE,
    ITERATIVE_UPDATE,
    SUMMARIZER_PREAMBLE,
    SUMMARY_END_MARKER,
    SUMMARY_PREFIX,
    SUMMARY_TEMPLATE,
    SYSTEM_NOTE,
    TEMPORAL_ANCHORING,
)
from conversation.history import sanitize_tool_pairs
from messages.chat import AssistantMessage, ChatMessage, Content, HumanMessage, SystemMessage, TextPart


def summary_instructions(
    *, budget_tokens: int, today: datetime.date, previous_summary: str | None = None, focus: str | None = None
) -> str:
    """The instructions handed to the summariser with the messages to summarise.

    Args:
        budget_tokens: the summary's size, asked for in words (no output cap is sent, as in Hermes).
        today: the date finished work is anchored to.
        previous_summary: the last compaction's summary, to be updated rather than rewritten.
        focus: a topic (``/compress TOPIC``) the summary favours.
    """
    parts = [SUMMARIZER_PREAMBLE, SUMMARY_TEMPLATE]
    if previous_summary:
        parts.append(ITERATIVE_UPDATE.format(previous_summary=previous_summary.strip()))
    parts.append(TEMPORAL_ANCHORING.format(today=today))
    if focus and focus.strip():
        parts.append(FOCUS_DIRECTIVE.format(topic=focus.strip()))
    parts.append(BUDGET_LINE.format(tokens=budget_tokens))
    return "\n\n".join(parts)


def _can_be(role: str, before: str | None, after: str | None) -> bool:
    if role == "user":
        return before in (None, "system", "assistant") and after in (None, "assistant")
    return before in ("user", "tool") and after in (None, "user")


def _prepend(content: Content | None, text: str) -> Content:
    if isinstance(content, tuple):
        return (TextPart(text), *content)
    return f"{text}\n\n{content}" if content else text


def with_system_note(message: SystemMessage) -> SystemMessage:
    """The system message with the compaction note appended once."""
    content = message.content or ""
    if isinstance(content, str) and SYSTEM_NOTE not in content:
        return attrs.evolve(message, content=f"{content}\n\n{SYSTEM_NOTE}" if content else SYSTEM_NOTE)
    return message


def assemble(head: Sequence[ChatMessage], summary: str, tail: Sequence[ChatMessage]) -> list[ChatMessage]:
    """Head + summary message + tail, with tool pairs sanitised.

    The summary takes the role (user, else assistant) that keeps alternation with its neighbours; when
    neither fits it is merged into the first tail message. As a user message it ends with the end marker.
    """
    new_head = list(head)
    if new_head and isinstance(new_head[0], SystemMessage):
        new_head[0] = with_system_note(new_head[0])
    new_tail = list(tail)
    body = f"{SUMMARY_PREFIX}\n\n{summary.strip()}"
    before = new_head[-1].role if new_head else None
    after = new_tail[0].role if new_tail else None
    middle: list[ChatMessage]
    if _can_be("user", before, after):
        middle = [HumanMessage(f"{body}\n\n{SUMMARY_END_MARKER}")]
    elif _can_be("assistant", before, after):
        middle = [AssistantMessage(body)]
    else:
        middle = []
        first = new_tail[0]
        merged = f"{body}\n\n{SUMMARY_END_MARKER}" if first.role == "user" else body
        new_tail[0] = attrs.evolve(first, content=_prepend(first.content, merged))
    return sanitize_tool_pairs([*new_head, *middle, *new_tail])
