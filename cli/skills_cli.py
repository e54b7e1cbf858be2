"""``hermes-actors skills list|view|create|delete|log``: the skill directories, read and written locally,
and what the background review changed in them (``log``).

No daemon is needed: skills are files (``HERMES_ACTORS_HOME/skills``, ``.hermes/skills`` of the current
directory, ``skills.external_dirs``, the bundled ones). Creating and deleting follow the agent's rules
(only user skills change; a taken name cannot be created; every SKILL.md is checked and scanned).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from cli.commands import print_json
from cli.config_check import checked_config
from cli.confirm import can_ask, confirmed
from control.errors import EXIT_FAILURE, EXIT_NOT_FOUND
from control.paths import home_from_env
from cli.learning_cli import print_changes
from tools.learning_log import read_changes
from tools.skills import SkillFormatError, SkillRoots, apply_change, discover
from tools.skills.library import Skill, linked_files

__all__ = ["run_skills_command"]


def run_skills_command(args: argparse.Namespace) -> int:
    """Run ``skills VERB``; the exit status."""
    home = home_from_env()
    config = checked_config(home)
    roots = SkillRoots.for_session(home, Path.cwd(), config.skills.external_dirs)
    try:
        if args.verb == "list":
            return _list(roots, args)
        if args.verb == "view":
            return _view(roots, args)
        if args.verb == "log":
            print_changes(read_changes(home, ("skill",), args.limit), args.json, "The background review has changed no skill yet.")
            return 0
        if args.verb == "create":
            raw = sys.stdin.buffer.read() if args.from_file == "-" else Path(args.from_file).read_bytes()
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                # Replacing bytes would store a skill the user never wrote: refused, saying where.
                source = "standard input" if args.from_file == "-" else repr(args.from_file)
                bad = f"byte 0x{raw[exc.start]:02x} at offset {exc.start}"
                return _fail(args, "invalid", f"{source} is not valid UTF-8 ({bad}); a SKILL.md must be UTF-8", EXIT_NOT_FOUND)
            change = {"action": "create", "name": args.name, "content": text, "category": args.category}
            return _report(args, apply_change(roots, change))
        return _delete(roots, args)
    except SkillFormatError as exc:
        return _fail(args, "invalid", str(exc), EXIT_NOT_FOUND)
    except OSError as exc:
        return _fail(args, "io", f"{exc.filename or ''}: {exc.strerror or exc}", EXIT_FAILURE)


def _fail(args: argparse.Namespace, code: str, message: str, status: int) -> int:
    if args.json:
        print_json({"error": {"code": code, "message": message}})
    print(f"hermes-actors: {message}", file=sys.stderr)
    return status


def _report(args: argparse.Namespace, result: dict[str, Any]) -> int:
    if args.json:
        print_json({"ok": True, **result})
    else:
        print(result["message"])
    return 0


def _entry(skill: Skill) -> dict[str, Any]:
    return {
        "name": skill.name,
        "category": skill.category,
        "source": skill.source.value,
        "description": skill.header.description,
        "tags": list(skill.header.tags),
        "path": str(skill.directory),
    }


def _list(roots: SkillRoots, args: argparse.Namespace) -> int:
    catalog = discover(roots)
    skills = catalog.select(source=args.source, category=args.category, tag=args.tag, query=args.query)
    if args.json:
        print_json({"skills": [_entry(skill) for skill in skills], "skipped": list(catalog.problems)})
        return 0
    for skill in skills:
        print(f"{skill.name:<32} {skill.category:<14} [{skill.source.value}] {skill.header.description}")
    for problem in catalog.problems:
        print(f"hermes-actors: skipped {problem}", file=sys.stderr)
    return 0


def _view(roots: SkillRoots, args: argparse.Namespace) -> int:
    skill = discover(roots).find(args.name)
    if skill is None:
        return _fail(args, "not_found", f"no skill named {args.name!r} (hermes-actors skills list)", EXIT_NOT_FOUND)
    files = linked_files(skill)
    if args.json:
        print_json({**_entry(skill), "content": skill.header.body, "linked_files": files})
        return 0
    print(f"# {skill.name} [{skill.source.value}] {skill.directory}\n{skill.header.description}\n")
    print(skill.header.body)
    for group in files.values():
        print("\n".join(f"  {path}" for path in group))
    return 0


def _delete(roots: SkillRoots, args: argparse.Namespace) -> int:
    if not args.yes:
        if not can_ask():
            return _fail(args, "invalid", "deleting a skill needs --yes when there is no terminal to ask", EXIT_NOT_FOUND)
        if not confirmed(f"Delete the skill {args.name!r}?"):
            print("Not deleted.")
            return EXIT_FAILURE
    return _report(args, apply_change(roots, {"action": "delete", "name": args.name}))
