"""The ``skills_list``, ``skill_view`` and ``skill_manage`` tools.

Skills are the agent's procedural memory: ``skills_list`` shows what exists, ``skill_view`` loads one (its
body first, a linked file on request: progressive disclosure), ``skill_manage`` lets the agent write its
own. Loading a skill lets the variables its frontmatter requires into that session's terminal and
``execute_code`` processes, and nowhere else. File work runs in worker threads.
"""

from __future__ import annotations

import difflib
import logging
import os
from datetime import datetime, timezone
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

import trio

from config.skills import SkillsConfig
from tools.errors import ToolInputError
from tools.jail.environment import with_passthrough
from tools.results import ToolResult
from tools.skills.format import SkillFormatError
from tools.skills.library import Skill, SkillCatalog, SkillRoots, discover, find_skill, linked_file, linked_files
from tools.skills import usage
from tools.skills.manage import apply_change

if TYPE_CHECKING:
    from tools.context import ShellState, ToolContext
    from tools.registry import ToolRegistry

__all__ = ["SKILL_MANAGE_SCHEMA", "SKILL_TOOL_NAMES", "SKILL_VIEW_SCHEMA", "SKILLS_LIST_SCHEMA", "register_skill_tools"]

log = logging.getLogger(__name__)

SKILL_TOOL_NAMES: Final = frozenset({"skills_list", "skill_view", "skill_manage"})
#: A linked file larger than this is not returned by skill_view.
MAX_VIEW_BYTES: Final = 1_000_000

SKILLS_LIST_SCHEMA: Final[dict[str, Any]] = {
    "name": "skills_list",
    "description": (
        "List the skills you can load: name, one-line description, category and source (project, user, "
        "external, bundled). Load one with skill_view(name)."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "category": {"type": "string", "description": "Only skills of this category."},
            "source": {
                "type": "string",
                "enum": ["project", "user", "external", "bundled"],
                "description": "Only skills from this source.",
            },
            "tag": {"type": "string", "description": "Only skills carrying this tag."},
            "query": {
                "type": "string",
                "description": "Only skills whose name or description contains this text (any case).",
            },
        },
        "required": [],
    },
}

SKILL_VIEW_SCHEMA: Final[dict[str, Any]] = {
    "name": "skill_view",
    "description": (
        "Load a skill: its instructions (SKILL.md) and the list of its linked files (references, templates, "
        "scripts, assets). Call again with file_path to read one of those. Follow a loaded skill's steps; "
        "variables it requires become available to your terminal and execute_code processes."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "The skill's name, as skills_list shows it."},
            "file_path": {
                "type": "string",
                "description": "A linked file of the skill, e.g. 'references/api.md'. Omit for SKILL.md.",
            },
        },
        "required": ["name"],
    },
}

SKILL_MANAGE_SCHEMA: Final[dict[str, Any]] = {
    "name": "skill_manage",
    "description": (
        "Write your own skills: reusable procedures for tasks that recur. They are saved under the user's "
        "skills directory; bundled and project skills are read only.\n\n"
        "Actions: create (a whole SKILL.md, optional category), patch (old_string -> new_string, for fixes), "
        "edit (rewrite SKILL.md), delete, write_file / remove_file (linked files under references/, "
        "templates/, scripts/ or assets/). On delete, absorbed_into names the skill this one was merged into "
        "(create or patch that one first), or is '' when the skill is simply pruned.\n\n"
        "SKILL.md starts with YAML frontmatter: name (lowercase, digits, '.', '_' or '-', at most 64 "
        "characters, equal to the name argument), description (what it is for and when to load it, at most "
        "1,024 characters), optional tags and required_environment_variables; then a markdown body: when to "
        "use it, numbered steps with exact commands, pitfalls, and how to check the result.\n\n"
        "Offer to save a skill after hard-won success: the task took five or more tool calls, you recovered "
        "from errors, the user corrected your approach and the corrected one worked, or the kind of task "
        "will come back. First ask the user how the result turned out; if it worked, ask whether to save "
        "the approach as a skill so it goes faster next time, and create it only if they agree. When a "
        "skill you followed turned out wrong or incomplete, patch it. Skip one-off trivia."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "action": {
                "type": "string",
                "enum": ["create", "patch", "edit", "delete", "write_file", "remove_file"],
                "description": "What to do.",
            },
            "name": {"type": "string", "description": "The skill's name (an existing user skill but for create)."},
            "content": {"type": "string", "description": "The whole SKILL.md, for create and edit."},
            "old_string": {"type": "string", "description": "For patch: the exact text to replace."},
            "new_string": {"type": "string", "description": "For patch: its replacement (may be empty)."},
            "replace_all": {"type": "boolean", "description": "For patch: replace every occurrence."},
            "category": {"type": "string", "description": "For create: a group such as 'devops'."},
            "file_path": {
                "type": "string",
                "description": "For write_file / remove_file, and patch of a linked file: e.g. 'scripts/check.sh'.",
            },
            "file_content": {"type": "string", "description": "For write_file: the file's text."},
            "absorbed_into": {
                "type": "string",
                "description": "For delete: the skill this one was merged into ('' when simply removed).",
            },
        },
        "required": ["action", "name"],
    },
}


_WITHHELD: Final = (
    "This project skill's variables were not passed to your processes: project skills come with the "
    "checkout. The user can allow them with terminal.env_passthrough, or by making it a user skill."
)


def roots_for(ctx: ToolContext, config: SkillsConfig) -> SkillRoots:
    """The skill directories of the session behind ``ctx`` (its project skills are in its workspace)."""
    workspace = ctx.jail.policy.host_path(ctx.jail.policy.workspace)
    return SkillRoots.for_session(ctx.home, workspace, config.external_dirs)


def grant_passthrough(shell: ShellState, names: tuple[str, ...], environ: Mapping[str, str] = os.environ) -> None:
    """Let ``names`` into the session's processes: its shell now, and its later execute_code runs."""
    shell.passthrough.update(names)
    if shell.env:
        # The shell's environment is built at its first command; one already built gets them now.
        with_passthrough(shell.env, environ, names)


def _listing(skill: Skill) -> dict[str, Any]:
    return {
        "name": skill.name,
        "description": skill.header.description,
        "category": skill.category,
        "source": skill.source.value,
        "tags": list(skill.header.tags),
    }


def _missing(catalog: SkillCatalog, name: str) -> ToolInputError:
    close = difflib.get_close_matches(name, list(catalog.skills), n=3, cutoff=0.5)
    hint = f" Did you mean: {', '.join(close)}?" if close else " skills_list shows the available ones."
    return ToolInputError(f"No skill named {name!r}.{hint}")


def _expand(text: str, skill: Skill, session_id: str, config: SkillsConfig) -> str:
    if not config.template_vars:
        return text
    return text.replace("${HERMES_SKILL_DIR}", str(skill.directory)).replace("${HERMES_SESSION_ID}", session_id)


def _note_usage(ctx: ToolContext, action: str, name: str) -> None:
    """Keep the curator's record of a user skill the tools just viewed or changed (blocking; a failure only
    logs: the call itself succeeded)."""
    now = datetime.now(timezone.utc)
    try:
        if action == "create":
            usage.note_created(ctx.home, name, now)
        elif action == "delete":
            usage.forget(ctx.home, name)
        else:
            usage.note_used(ctx.home, name, now)
    except OSError as exc:
        log.warning("the skills' usage record could not be updated for %r: %s", name, exc)


def register_skill_tools(registry: ToolRegistry, config: SkillsConfig | None = None) -> None:
    """Register skills_list, skill_view and skill_manage (toolset ``skills``) in ``registry``."""
    config = config if config is not None else SkillsConfig()

    async def skills_list(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        catalog = await trio.to_thread.run_sync(discover, roots_for(ctx, config))
        wanted = catalog.select(
            source=args.get("source"), category=args.get("category"), tag=args.get("tag"), query=args.get("query")
        )
        payload: dict[str, Any] = {
            "skills": [_listing(skill) for skill in wanted],
            "count": len(wanted),
            "categories": sorted({skill.category for skill in catalog.skills.values()}),
        }
        if catalog.problems:
            payload["skipped"] = len(catalog.problems)
        return ToolResult(payload)

    async def skill_view(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        name, file_path = args["name"], args.get("file_path")

        def load() -> dict[str, Any]:
            roots = roots_for(ctx, config)
            skill = find_skill(roots, name)
            if skill is None:
                raise _missing(discover(roots), name)
            if skill.editable:
                _note_usage(ctx, "view", skill.name)
            if file_path:
                return _view_file(skill, file_path)
            required = skill.header.required_environment_variables
            loaded = {
                **_listing(skill),
                "content": _expand(skill.header.body, skill, ctx.session_id, config),
                "linked_files": linked_files(skill),
                "required_environment_variables": list(required),
                "missing_environment_variables": [var for var in required if var not in os.environ],
            }
            if skill.unlocks_environment:
                grant_passthrough(ctx.shell, required)
            elif required:
                loaded["withheld_environment_variables"] = list(required)
                loaded["note"] = _WITHHELD
            return loaded

        def _view_file(skill: Skill, raw: str) -> dict[str, Any]:
            path = linked_file(skill, raw)
            if not path.is_file():
                raise ToolInputError(f"{raw} is not a linked file of {skill.name!r}; its files: {linked_files(skill)}")
            if path.stat().st_size > MAX_VIEW_BYTES:
                raise ToolInputError(f"{raw} is larger than {MAX_VIEW_BYTES:,} bytes; read parts of it with read_file.")
            data = path.read_bytes()
            if b"\x00" in data[:8192]:
                return {"name": skill.name, "file_path": raw, "binary": True, "size": len(data)}
            text = _expand(data.decode("utf-8", errors="replace"), skill, ctx.session_id, config)
            return {"name": skill.name, "file_path": raw, "content": text}

        return ToolResult(await trio.to_thread.run_sync(load))

    async def skill_manage(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        roots = roots_for(ctx, config)

        def change() -> dict[str, Any]:
            done = apply_change(roots, args)
            _note_usage(ctx, str(args.get("action")), str(args.get("name")))
            return done

        try:
            return ToolResult(await trio.to_thread.run_sync(change))
        except OSError as exc:
            raise SkillFormatError(f"The skill could not be written: {exc.strerror or exc}.") from exc

    registry.register("skills_list", "skills", SKILLS_LIST_SCHEMA, skills_list, parallel_safe=True, emoji="📚")
    registry.register("skill_view", "skills", SKILL_VIEW_SCHEMA, skill_view, emoji="📚")
    registry.register("skill_manage", "skills", SKILL_MANAGE_SCHEMA, skill_manage, emoji="📝")
