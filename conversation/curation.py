"""What the skills curator's consolidation pass asks the auxiliary model (``curator.consolidate``).

Our own prompt for Hermes's pass: the model reads the agent-created skills, merges those that overlap
into one class-level skill (patching the broadest, or creating an umbrella), and archives what it
absorbed with ``skill_manage`` ``delete``, which the curator turns into an archive, never a deletion. A
dry run offers only ``skill_view`` and asks for the plan instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from messages.chat import ChatMessage, HumanMessage, SystemMessage
from tools.skills.curation import Candidate

__all__ = ["CURATOR_TOOLS", "curation_messages"]

#: The tools the pass is offered (``skill_manage`` only when it may change skills).
CURATOR_TOOLS: Final = frozenset({"skill_view", "skill_manage"})

_INTRO = (
    "You are the curator of an AI agent's skill library, running in the background; nobody is waiting "
    "for you. The skills listed below were written by the agent itself, one session at a time, so some "
    "overlap or are too narrow. Make the library a set of class-level skills: when two or more skills "
    "serve the same kind of task, merge them into one (patch or edit the broadest so it covers what the "
    "others add, or create an umbrella skill), then archive each absorbed skill with skill_manage action "
    "'delete' and absorbed_into naming the skill that now holds its content. Archiving is recoverable; "
    "nothing is ever deleted. Read a skill with skill_view before you merge it. Change only the skills "
    "listed here. Keep a skill that is distinct and useful as it is. Each time you change something, "
    "say in one short sentence why (that sentence is shown to the user beside the change); end with a "
    "one-line summary of what you did."
)
_DRY_RUN = (
    "This is a dry run: change nothing. Read what you need with skill_view, then answer with the merges "
    "and archives you would make, one line each with its reason."
)


def curation_messages(found: Sequence[Candidate], *, dry_run: bool) -> list[ChatMessage]:
    """The request of one consolidation pass over ``found``, the agent-created skills."""
    lines = [
        f"- {c.name}: {c.description} (used {c.usage.use_count} times, last {c.usage.last_used_at or 'never'}; "
        f"created {c.usage.created_at})"
        for c in found
    ]
    intro = f"{_INTRO}\n\n{_DRY_RUN}" if dry_run else _INTRO
    return [SystemMessage(intro), HumanMessage("The agent-created skills:\n" + "\n".join(lines))]
