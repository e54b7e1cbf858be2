"""The skills index: the layer of the system prompt that lists every skill a session can load.

Built once when the session starts (the prompt is then frozen, so the provider's prompt cache holds):
a skill created later shows in ``skills_list`` at once and in the index of new sessions. The framing
is firm on purpose: models skip skills for tasks they believe they know, and miss the user's own
conventions and pitfalls that the skill holds.
"""

from __future__ import annotations

from itertools import groupby
from typing import Final

from tools.skills.library import SkillCatalog

__all__ = ["INDEX_DESCRIPTION_CHARS", "skills_prompt_section"]

#: The index gives each skill one line; a longer description is cut here (skills_list has it whole).
INDEX_DESCRIPTION_CHARS: Final = 200

_HEADER = """## Skills (load before you act)
The skills below hold procedures that worked here before: exact commands, the user's conventions, \
known pitfalls and how to check the result. Before you answer, look through the list. If any skill \
fits the task, even in part, load it with skill_view(name) and follow it, even when you think you \
could manage with the terminal or a web search alone; loading one that turns out not to be needed \
costs little, missing one costs a repeated mistake."""

_FOOTER = """Go ahead without a skill only when none of them bears on the task. After a hard-won success \
that is likely to recur, offer to save the approach with skill_manage."""


def _line(description: str) -> str:
    text = " ".join(description.split())
    return text if len(text) <= INDEX_DESCRIPTION_CHARS else text[: INDEX_DESCRIPTION_CHARS - 1] + "…"


def skills_prompt_section(catalog: SkillCatalog) -> str:
    """The index for ``catalog``, grouped by category; empty when there is no skill."""
    if not catalog.skills:
        return ""
    lines = ["<available_skills>"]
    for category, skills in groupby(catalog.skills.values(), key=lambda skill: skill.category):
        lines.append(f"  {category}:")
        lines.extend(f"    - {skill.name}: {_line(skill.header.description)}" for skill in skills)
    lines.append("</available_skills>")
    return "\n\n".join((_HEADER, "\n".join(lines), _FOOTER))
