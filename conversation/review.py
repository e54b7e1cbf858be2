"""The learning loop's rules: when a finished turn is reviewed, and what the reviewing model is asked.

Hermes Agent's counting, kept: a memory review is due every ``memory.nudge_interval`` user turns
(counted when a turn starts, the count set back to zero when the model itself calls ``memory``, and
taken up again from the history's user turns when a stored session wakes); a skill review is due when a
turn ends and the model calls since the last ``skill_manage`` reach ``skills.creation_nudge_interval``.
Only a turn that completed is reviewed, and only for a tool the session has. The review sees the
conversation as text, the way the compressor's summary does, so the reviewing model never needs the
session's other tools declared.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import attrs

from messages.chat import AssistantMessage, ChatMessage, HumanMessage, SystemMessage, content_text
from tools.redact import redact_secrets

__all__ = ["REVIEW_TOOLS", "NudgeCounters", "ReviewFocus", "review_messages", "turn_messages"]

#: The only tools a review may call.
REVIEW_TOOLS: Final = frozenset({"memory", "skill_manage"})

#: The newest messages a review reads, and how much of each.
_RECENT_MESSAGES: Final = 40
_MESSAGE_CHARS: Final = 2_000


def turn_messages(history: Sequence[ChatMessage]) -> Sequence[ChatMessage]:
    """The messages of the history's last turn: those after its last user message."""
    for index in range(len(history) - 1, -1, -1):
        if isinstance(history[index], HumanMessage):
            return history[index + 1 :]
    return ()


@attrs.frozen
class ReviewFocus:
    """What a review looks for: durable facts about the user and their setup, reusable procedures, or both."""

    memory: bool = False
    skills: bool = False

    def __bool__(self) -> bool:
        return self.memory or self.skills


@attrs.define
class NudgeCounters:
    """A session's counts toward its next review (not saved: a woken session counts again from its history).

    Attributes:
        memory_turns: user turns since the last memory write or memory review.
        skill_calls: model calls since the last ``skill_manage`` or skill review.
        memory_due: the running turn reached the memory interval when it started.
    """

    memory_turns: int = 0
    skill_calls: int = 0
    memory_due: bool = False

    def resume(self, history: Sequence[ChatMessage], memory_interval: int) -> None:
        """Take the memory count up where a stored session's history left it (its user turns so far)."""
        if memory_interval > 0 and self.memory_turns == 0:
            self.memory_turns = sum(isinstance(m, HumanMessage) for m in history) % memory_interval

    def start_turn(self, memory_interval: int, *, has_memory: bool) -> None:
        """A user turn starts: count it toward the memory review."""
        self.memory_due = False
        if memory_interval <= 0 or not has_memory:
            return
        self.memory_turns += 1
        if self.memory_turns >= memory_interval:
            self.memory_due = True
            self.memory_turns = 0

    def finish_turn(
        self, new_messages: Sequence[ChatMessage], skill_interval: int, *, completed: bool, has_skills: bool
    ) -> ReviewFocus:
        """A turn ended with ``new_messages``: what, if anything, to review now."""
        for message in new_messages:
            if not isinstance(message, AssistantMessage):
                continue
            if skill_interval > 0 and has_skills:
                self.skill_calls += 1
            names = {call.name for call in message.tool_calls}
            if "memory" in names:
                self.memory_turns = 0
            if "skill_manage" in names:
                self.skill_calls = 0
        skills_due = skill_interval > 0 and has_skills and self.skill_calls >= skill_interval
        if skills_due:
            self.skill_calls = 0
        focus = ReviewFocus(memory=self.memory_due, skills=skills_due)
        self.memory_due = False
        return focus if completed else ReviewFocus()


_INTRO = (
    "You are the background reviewer of an AI agent. The conversation below has just ended a turn; "
    "the user is not waiting for you and will not read your reply. Decide whether anything in it is "
    "worth keeping for future sessions, save it with your tools, and then answer with one short sentence "
    "saying what you kept and why (or 'Nothing to keep.'). That sentence is shown to the user beside "
    "each change, so make it a reason, not a summary of the chat."
)
_MEMORY_FOCUS = (
    "Memory: look for lasting facts about the user (who they are, what they prefer, how they want "
    "you to work, corrections they made) and about their environment (project conventions, tool quirks). "
    "Save them with the memory tool as short declarative facts: target 'user' for the person, 'memory' "
    "for the rest. Skip task progress, anything that will be stale within a week, and anything already "
    "in the current memory below. Never store secrets."
)
_SKILL_FOCUS = (
    "Skills: look for a procedure that took real effort and will come back (many tool calls, a recovery "
    "from errors, an approach the user corrected). Prefer improving an existing skill (skill_manage "
    "patch or edit) over creating a narrow new one; create one only for a kind of task, not for this "
    "single instance. A skill is a SKILL.md with name and description frontmatter and concrete steps "
    "and pitfalls."
)


def _transcript(history: Sequence[ChatMessage]) -> str:
    lines = []
    for message in history[-_RECENT_MESSAGES:]:
        if isinstance(message, SystemMessage):
            continue  # the agent's own prompt: its memory block is given below, fresh
        text = content_text(message.content)
        if isinstance(message, AssistantMessage) and message.tool_calls:
            calls = ", ".join(f"{call.name}({call.arguments[:200]})" for call in message.tool_calls)
            text = f"{text}\n[called: {calls}]".strip()
        if len(text) > _MESSAGE_CHARS:
            text = text[:_MESSAGE_CHARS] + " […]"
        lines.append(f"{message.role}: {text}")
    # The review may run on another provider than the conversation's: no secret goes to it.
    return redact_secrets("\n\n".join(lines))


def review_messages(
    history: Sequence[ChatMessage], focus: ReviewFocus, *, memory_now: str, skill_names: Sequence[str]
) -> list[ChatMessage]:
    """The request a review sends: what to look for, what is kept already, and the conversation.

    Args:
        history: the session's history after the turn.
        focus: what this review looks for.
        memory_now: the memory block as it stands (empty when there is none).
        skill_names: the user's own skills, which a review may patch.
    """
    parts = [_INTRO]
    if focus.memory:
        parts.append(_MEMORY_FOCUS)
        parts.append("Current memory:\n" + (memory_now or "(empty)"))
    if focus.skills:
        parts.append(_SKILL_FOCUS)
        parts.append("Existing skills you may improve: " + (", ".join(skill_names) or "(none)"))
    return [
        SystemMessage("\n\n".join(parts)),
        HumanMessage("The conversation to review:\n\n" + _transcript(history)),
    ]
