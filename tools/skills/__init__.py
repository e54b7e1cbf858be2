"""Skills: procedures the agent loads when a task calls for them, and writes after hard-won successes.

- ``format``: the SKILL.md format and its rules.
- ``library``: the sources (project, user, external, bundled), discovery and precedence.
- ``manage``: the agent's changes to its own (user) skills.
- ``index``: the skills index layer of the system prompt.
- ``tool``: the ``skills_list``, ``skill_view`` and ``skill_manage`` tools.
"""

from tools.skills.format import SkillFormatError, SkillHeader, parse_skill
from tools.skills.index import skills_prompt_section
from tools.skills.library import BUNDLED_DIR, Skill, SkillCatalog, SkillChangeRefused, SkillRoots, SkillSource, discover
from tools.skills.manage import apply_change
from tools.skills.tool import SKILL_TOOL_NAMES, register_skill_tools

__all__ = [
    "BUNDLED_DIR",
    "SKILL_TOOL_NAMES",
    "Skill",
    "SkillCatalog",
    "SkillChangeRefused",
    "SkillFormatError",
    "SkillHeader",
    "SkillRoots",
    "SkillSource",
    "apply_change",
    "discover",
    "parse_skill",
    "register_skill_tools",
    "skills_prompt_section",
]
