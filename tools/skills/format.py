"""The SKILL.md format (agentskills): YAML frontmatter, a markdown body, and the rules a skill must keep.

A skill is a directory, named after the skill, holding ``SKILL.md`` and, optionally, linked files under ``references/``,
``templates/``, ``scripts/`` or ``assets/``. The frontmatter needs ``name`` (at most 64 lowercase,
filesystem-safe characters) and ``description`` (at most 1,024 characters); ``tags``, ``category`` and
``required_environment_variables`` are optional; other keys are kept as they are. The body must not be
empty. Every rule broken is a :class:`SkillFormatError` whose text says which and how to fix it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

import attrs
import yaml

from tools.errors import ToolInputError

__all__ = [
    "LINKED_DIRS",
    "MAX_CONTENT_CHARS",
    "MAX_DESCRIPTION_CHARS",
    "MAX_NAME_CHARS",
    "SKILL_FILE",
    "SkillFormatError",
    "SkillHeader",
    "check_name",
    "parse_skill",
]

SKILL_FILE: Final = "SKILL.md"
MAX_NAME_CHARS: Final = 64
MAX_DESCRIPTION_CHARS: Final = 1_024
#: A SKILL.md larger than this is refused on write (about 36k tokens; Hermes's limit).
MAX_CONTENT_CHARS: Final = 100_000
#: The subdirectories linked files may live in.
LINKED_DIRS: Final = frozenset({"references", "templates", "scripts", "assets"})

_NAME = re.compile(r"[a-z0-9][a-z0-9._-]*")
# libyaml's loader where the wheel has it: the index of a few hundred skills parses each frontmatter.
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class SkillFormatError(ToolInputError):
    """A SKILL.md (or a skill name) that breaks a rule of the format; the text names the rule."""


@attrs.frozen
class SkillHeader:
    """What a SKILL.md says about its skill, checked.

    Attributes:
        name: The skill's name, also its directory's.
        description: One paragraph: what the skill is for and when to load it.
        tags: Free labels, for filtering.
        category: The group it is listed under in the index (``None``: its directory's parent decides).
        required_environment_variables: Variables the skill's commands need; passed into the session's
            processes once the skill is loaded.
        body: The markdown after the frontmatter.
    """

    name: str
    description: str
    tags: tuple[str, ...] = ()
    category: str | None = None
    required_environment_variables: tuple[str, ...] = ()
    body: str = ""


def check_name(name: object, what: str = "name") -> str:
    """``name`` if it is a valid skill (or category) name.

    Raises:
        SkillFormatError: empty, too long, or holding other than lowercase letters, digits, ``.``, ``_``, ``-``.
    """
    if not isinstance(name, str) or not name:
        raise SkillFormatError(f"The skill's {what} is missing; give a lowercase name such as 'deploy-docker'.")
    if len(name) > MAX_NAME_CHARS:
        raise SkillFormatError(f"The skill's {what} {name[:80]!r} is {len(name)} characters; at most {MAX_NAME_CHARS}.")
    if not _NAME.fullmatch(name):
        raise SkillFormatError(
            f"The skill's {what} {name!r} must start with a lowercase letter or digit and hold only lowercase "
            "letters, digits, '.', '_' and '-' (it names a directory)."
        )
    return name


def parse_skill(text: str) -> SkillHeader:
    """Split and check a SKILL.md.

    Raises:
        SkillFormatError: no frontmatter, bad YAML, a missing or malformed field, or an empty body.
    """
    frontmatter, body = _split(text)
    try:
        data = yaml.load(frontmatter, Loader=_LOADER)  # noqa: S506 (a safe loader)
    except yaml.YAMLError as exc:
        raise SkillFormatError(f"The frontmatter of SKILL.md is not valid YAML: {exc}") from None
    if not isinstance(data, Mapping):
        raise SkillFormatError("The frontmatter of SKILL.md must be a YAML mapping (name: ..., description: ...).")
    name = check_name(data.get("name"))
    description = data.get("description")
    if not isinstance(description, str) or not description.strip():
        raise SkillFormatError("The frontmatter needs a 'description': one paragraph on what the skill does and when.")
    if len(description) > MAX_DESCRIPTION_CHARS:
        raise SkillFormatError(
            f"The description is {len(description)} characters; at most {MAX_DESCRIPTION_CHARS}. "
            "Move detail into the body."
        )
    if not body.strip():
        raise SkillFormatError("The body of SKILL.md (after the frontmatter) is empty; write the procedure there.")
    category = data.get("category")
    return SkillHeader(
        name=name,
        description=" ".join(description.split()),
        tags=_strings(data, "tags"),
        category=None if category is None else check_name(category, "category"),
        required_environment_variables=_environment_names(data),
        body=body.strip("\n"),
    )


def _split(text: str) -> tuple[str, str]:
    lines = text.lstrip("\ufeff").splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        raise SkillFormatError("SKILL.md must begin with YAML frontmatter between '---' lines.")
    for index, line in enumerate(lines[1:], start=1):
        if line.strip() == "---":
            return "".join(lines[1:index]), "".join(lines[index + 1 :])
    raise SkillFormatError("The frontmatter of SKILL.md is not closed by a '---' line.")


def _strings(data: Mapping[str, Any], key: str) -> tuple[str, ...]:
    value = data.get(key)
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(item, str) and item.strip() for item in value):
        raise SkillFormatError(f"'{key}' must be a list of non-empty strings.")
    return tuple(item.strip() for item in value)


def _environment_names(data: Mapping[str, Any]) -> tuple[str, ...]:
    names = _strings(data, "required_environment_variables")
    for name in names:
        if not _ENV_NAME.fullmatch(name):
            raise SkillFormatError(f"'required_environment_variables' holds {name!r}, which is not a variable name.")
    return names
