"""Phase 2 of compression: where the protected head ends and the protected tail starts
(docs/DECISIONS.md#d-compression).

The head is the system prompt plus the first ``protect_first_n`` messages, pushed forward past any tool
results so the summarised region starts on a user or assistant message. The tail is found by walking
back from the end with a token budget: at least three messages, a soft ceiling of 1.5x the budget so a
large tool group is taken whole rather than cut, never a tool result without its call, and always the
last user message (otherwise the user's current request would vanish into the summary).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs

from messages.chat import ChatMessage

# The spec's hard minimum of messages in the tail (``compression.protect_last_n``).
MIN_TAIL_MESSAGES = 3
SOFT_CEILING = 1.5

MessageTokens = Callable[[ChatMessage], int]


@attrs.frozen
class Boundaries:
    """``messages[:head_end]`` is kept, ``messages[head_end:tail_start]`` summarised, ``messages[tail_start:]`` kept."""

    head_end: int
    tail_start: int


def head_end(messages: Sequence[ChatMessage], protect_first_n: int) -> int:
    """Index just past the protected head, moved forward past tool results."""
    end = 1 if messages and messages[0].role == "system" else 0
    end = min(end + protect_first_n, len(messages))
    while end < len(messages) and messages[end].role == "tool":
        end += 1
    return end


def _group_start(messages: Sequence[ChatMessage], index: int) -> int:
    """The index of the assistant message whose tool group contains ``index``."""
    while index > 0 and messages[index].role == "tool":
        index -= 1
    return index


def _group_end(messages: Sequence[ChatMessage], index: int) -> int:
    """The first index after the tool results starting at ``index``."""
    while index < len(messages) and messages[index].role == "tool":
        index += 1
    return index


def tail_start(
    messages: Sequence[ChatMessage], head: int, budget: int, tokens: MessageTokens, min_tail: int = MIN_TAIL_MESSAGES
) -> int:
    """Index where the protected tail starts (``len(messages)`` when nothing could be kept).

    The tail holds at least ``min_tail`` messages (when the head leaves that many), whatever they cost.
    """
    sizes = [tokens(m) for m in messages]
    cut = len(messages)
    total = 0
    for index in range(len(messages) - 1, head - 1, -1):
        if len(messages) - cut >= min_tail and total + sizes[index] > budget:
            break
        total += sizes[index]
        cut = index
    if cut < len(messages) and messages[cut].role == "tool":
        # The head was aligned past tool results, so this group's assistant message is not in the head.
        start = _group_start(messages, cut)
        after_group = _group_end(messages, cut)
        with_group = total + sum(sizes[start:cut])
        if with_group <= budget * SOFT_CEILING or len(messages) - after_group < min_tail:
            cut = start
        else:
            cut = after_group
    last_user = max((i for i, m in enumerate(messages) if m.role == "user"), default=None)
    if last_user is not None and last_user >= head and last_user < cut:
        cut = last_user
    return max(cut, head)


def find_boundaries(
    messages: Sequence[ChatMessage],
    *,
    protect_first_n: int,
    tail_budget: int,
    tokens: MessageTokens,
    min_tail: int = MIN_TAIL_MESSAGES,
) -> Boundaries:
    """Both boundaries of one compression pass."""
    head = head_end(messages, protect_first_n)
    return Boundaries(head_end=head, tail_start=tail_start(messages, head, tail_budget, tokens, min_tail))
