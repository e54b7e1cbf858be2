"""The agent's changes to its own skills: create, edit, patch, delete, and linked files.

Only user skills (``HERMES_ACTORS_HOME/skills``) change. Every SKILL.md written is checked against the
format and scanned for prompt injection and exfiltration (the scanner context files go through), and
written atomically; a name held by a skill of any source cannot be created again. All blocking: run in
a worker thread.
"""

from __future__ import annotations

import shutil
from pathlib import Path, PurePosixPath
from typing import Any, Final

from tools.files import atomic_write
from tools.skills.format import (
    MAX_CONTENT_CHARS,
    SKILL_FILE,
    SkillFormatError,
    SkillHeader,
    check_name,
    parse_skill,
)
from tools.skills.library import Skill, SkillCatalog, SkillChangeRefused, SkillRoots, discover, linked_file
from tools.threats import find_threats

__all__ = ["MAX_LINKED_FILE_BYTES", "apply_change"]

#: A linked file (script, template, reference) larger than this is refused.
MAX_LINKED_FILE_BYTES: Final = 1_000_000


def apply_change(roots: SkillRoots, args: dict[str, Any]) -> dict[str, Any]:
    """Carry out one ``skill_manage`` call and say what was done.

    Raises:
        SkillFormatError: the content breaks the format, or the change is refused (:class:`SkillChangeRefused`).
    """
    action = args.get("action")
    name = check_name(args.get("name"))
    catalog = discover(roots)
    if action == "create":
        return _create(roots, catalog, name, _content(args), args.get("category"))
    skill = _own_skill(catalog, name, str(action))
    if action == "edit":
        return _write_skill_file(skill.directory, name, _content(args), "edited")
    if action == "patch":
        return _patch(skill, args)
    if action == "delete":
        return _delete(catalog, skill, args.get("absorbed_into"))
    if action == "write_file":
        return _write_linked(skill, args)
    if action == "remove_file":
        return _remove_linked(skill, args)
    raise SkillFormatError(f"Unknown action {action!r}: use create, patch, edit, delete, write_file or remove_file.")


def _content(args: dict[str, Any]) -> str:
    content = args.get("content")
    if not isinstance(content, str) or not content.strip():
        raise SkillFormatError("'content' is required: the whole SKILL.md (frontmatter and body).")
    return content


def _checked(content: str, name: str) -> SkillHeader:
    if len(content) > MAX_CONTENT_CHARS:
        raise SkillFormatError(
            f"SKILL.md is {len(content):,} characters; at most {MAX_CONTENT_CHARS:,}. "
            "Move reference material into linked files (references/...)."
        )
    header = parse_skill(content)
    if header.name != name:
        raise SkillFormatError(f"The frontmatter names the skill {header.name!r}, but the call is for {name!r}.")
    _refuse_threats(content, SKILL_FILE)
    return header


def _refuse_threats(text: str, what: str) -> None:
    threats = find_threats(text)
    if threats:
        raise SkillChangeRefused(
            f"{what} was not written: it matches the threat patterns {', '.join(threats)} "
            "(prompt injection, exfiltration or hidden characters). Remove them and try again."
        )


def _create(roots: SkillRoots, catalog: SkillCatalog, name: str, content: str, category: object) -> dict[str, Any]:
    taken = catalog.holders(name)
    if taken:
        sources = ", ".join(sorted({skill.source.value for skill in taken}))
        raise SkillChangeRefused(f"A skill named {name!r} already exists ({sources}); choose another name or edit it.")
    header = _checked(content, name)
    group = header.category or (None if category in (None, "") else check_name(category, "category"))
    directory = roots.user / group / name if group else roots.user / name
    return _write_skill_file(directory, name, content, "created", header)


def _own_skill(catalog: SkillCatalog, name: str, action: str) -> Skill:
    skill = catalog.find(name)
    if skill is None:
        raise SkillFormatError(f"No skill named {name!r}; skills_list shows the available ones.")
    if not skill.editable:
        raise SkillChangeRefused(
            f"{name!r} is a {skill.source.value} skill: only user skills can be changed ({action} refused). "
            "Create a user skill under a new name instead."
        )
    return skill


def _write_skill_file(
    directory: Path, name: str, content: str, done: str, header: SkillHeader | None = None
) -> dict[str, Any]:
    if header is None:
        _checked(content, name)
    path = directory / SKILL_FILE
    atomic_write(path, content.encode("utf-8"), new_file_mode=0o644)
    return {"success": True, "message": f"Skill {name!r} {done}.", "path": str(path)}


def _patch(skill: Skill, args: dict[str, Any]) -> dict[str, Any]:
    old, new = args.get("old_string"), args.get("new_string")
    if not isinstance(old, str) or not old or not isinstance(new, str):
        raise SkillFormatError("'patch' needs 'old_string' (non-empty) and 'new_string' (may be empty).")
    raw_path = args.get("file_path") or SKILL_FILE
    path = skill.directory / SKILL_FILE if raw_path == SKILL_FILE else linked_file(skill, raw_path)
    text = path.read_text(encoding="utf-8")
    count = text.count(old)
    if count == 0:
        raise SkillFormatError(f"'old_string' was not found in {raw_path}; view the skill and copy the text exactly.")
    if count > 1 and not args.get("replace_all"):
        raise SkillFormatError(f"'old_string' occurs {count} times in {raw_path}; add context or pass replace_all=true.")
    updated = text.replace(old, new) if args.get("replace_all") else text.replace(old, new, 1)
    if raw_path == SKILL_FILE:
        return _write_skill_file(skill.directory, skill.name, updated, f"patched ({count if args.get('replace_all') else 1} change)")
    _refuse_threats(updated, raw_path)
    atomic_write(path, updated.encode("utf-8"))
    return {"success": True, "message": f"{raw_path} of {skill.name!r} patched.", "path": str(path)}


def _delete(catalog: SkillCatalog, skill: Skill, absorbed_into: object) -> dict[str, Any]:
    if absorbed_into not in (None, ""):
        target = catalog.find(check_name(absorbed_into, "absorbed_into"))
        if target is None or target.name == skill.name:
            raise SkillFormatError(
                f"absorbed_into names {absorbed_into!r}, which is not another existing skill; create or patch it first."
            )
    shutil.rmtree(skill.directory)
    message = f"Skill {skill.name!r} deleted."
    if absorbed_into:
        message += f" Its content lives on in {absorbed_into!r}."
    return {"success": True, "message": message}


def _write_linked(skill: Skill, args: dict[str, Any]) -> dict[str, Any]:
    path = linked_file(skill, args.get("file_path"))
    content = args.get("file_content")
    if not isinstance(content, str):
        raise SkillFormatError("'write_file' needs 'file_content' (the file's text).")
    data = content.encode("utf-8")
    if len(data) > MAX_LINKED_FILE_BYTES:
        raise SkillFormatError(f"The file is {len(data):,} bytes; a linked file may hold at most {MAX_LINKED_FILE_BYTES:,}.")
    _refuse_threats(content, str(args["file_path"]))
    executable = PurePosixPath(str(args["file_path"])).parts[0] == "scripts"
    created = atomic_write(path, data, new_file_mode=0o755 if executable else 0o644)
    verb = "written" if created else "replaced"
    return {"success": True, "message": f"{args['file_path']} of {skill.name!r} {verb}.", "path": str(path)}


def _remove_linked(skill: Skill, args: dict[str, Any]) -> dict[str, Any]:
    path = linked_file(skill, args.get("file_path"))
    if not path.is_file():
        raise SkillFormatError(f"{args['file_path']} is not a file of {skill.name!r}.")
    path.unlink()
    return {"success": True, "message": f"{args['file_path']} removed from {skill.name!r}."}
