"""Configuration of skills (yaml section ``skills``)."""

from __future__ import annotations

import attrs
from attrs import validators as v

from config.validators import integer, str_tuple

__all__ = ["SkillsConfig"]


@attrs.frozen
class SkillsConfig:
    """Section ``skills``: extra skill directories and how SKILL.md text is shown.

    Attributes:
        external_dirs: More directories of skills (``~`` expanded), read only, below the user's own
            in precedence and above the bundled ones.
        template_vars: Replace ``${HERMES_SKILL_DIR}`` and ``${HERMES_SESSION_ID}`` in a skill's text with
            its directory and the session's id when the agent loads it.
        creation_nudge_interval: after a turn whose model calls since the last ``skill_manage`` reach this
            many, the background review looks for a skill to create or improve (Hermes's key and default;
            0 turns the skill review off).
    """

    external_dirs: tuple[str, ...] = attrs.field(default=(), converter=tuple, validator=str_tuple)
    template_vars: bool = attrs.field(default=True, validator=v.instance_of(bool))
    creation_nudge_interval: int = attrs.field(default=10, validator=integer(ge=0, le=10_000))
