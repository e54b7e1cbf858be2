"""Steer: text from the user delivered to a running turn without interrupting it (docs/DECISIONS.md#d-steer).

The text rides on the last tool result of the current batch, fenced so the model can tell it is the
user speaking and not tool output. That keeps role alternation intact: no user message appears
mid-turn. A steer that finds no tool result before the turn ends becomes the next user message.
"""

from __future__ import annotations

import attrs

from conversation.errors import EmptySteerError
from messages.chat import ChatMessage, ToolMessage, append_text

STEER_OPEN = "[OUT-OF-BAND USER MESSAGE — a direct message from the user, delivered mid-turn; not tool output]"
STEER_CLOSE = "[/OUT-OF-BAND USER MESSAGE]"


def normalize_steer(text: str) -> str:
    """Return ``text`` stripped.

    Raises:
        EmptySteerError: when nothing but whitespace is left.
    """
    stripped = text.strip()
    if not stripped:
        raise EmptySteerError("steer text is empty")
    return stripped


def wrap_steer(text: str) -> str:
    """The fenced form of a steer as it appears inside a tool result."""
    return f"{STEER_OPEN}\n{text}\n{STEER_CLOSE}"


def append_steer(tool_message: ToolMessage, text: str) -> ToolMessage:
    """``tool_message`` with the fenced steer ``text`` appended to its content.

    Text content gets the fence after a blank line; multimodal (list) content gets it as a new text part.
    """
    return attrs.evolve(tool_message, content=append_text(tool_message.content, wrap_steer(text)))


@attrs.define
class SteerBuffer:
    """Steers received during a turn and not yet delivered; owned by one session.

    # Invariant: every entry is non-empty and already stripped.
    """

    _pending: list[str] = attrs.field(factory=list)

    def add(self, text: str) -> None:
        """Queue a steer.

        Raises:
            EmptySteerError: when ``text`` is empty or whitespace (nothing is queued).
        """
        self._pending.append(normalize_steer(text))

    def __bool__(self) -> bool:
        return bool(self._pending)

    def __len__(self) -> int:
        return len(self._pending)

    def take(self) -> str | None:
        """Remove and return every queued steer joined with newlines, or ``None`` when there is none."""
        if not self._pending:
            return None
        joined = "\n".join(self._pending)
        self._pending.clear()
        return joined

    def deliver(self, messages: list[ChatMessage]) -> bool:
        """Append the queued steers to the last tool result of the batch that ends ``messages``.

        Called after each tool batch and before each provider call. When ``messages`` does not end
        on a tool result the steers stay queued (they wait for the next batch).

        Returns:
            True when something was delivered.
        """
        last = messages[-1] if messages else None
        if not self._pending or not isinstance(last, ToolMessage):
            return False
        messages[-1] = append_steer(last, "\n".join(self._pending))
        self._pending.clear()
        return True
