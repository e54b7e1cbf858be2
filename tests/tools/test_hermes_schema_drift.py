"""Every tool shared with Hermes Agent 0.19.0 offers the model Hermes's parameters and instructions.

The truth is the schema Hermes's own registry hands the model, pinned from its wheel in
``tests/fixtures/hermes_0_19/tool_schemas.json``. Parameter names, types, ``required``, ``enum`` and
limits are compared recursively; a difference fails unless ``tests/fixtures/hermes_schema_differences.json``
gives its reason, and every such reason is also a row of ``docs/HERMES_COMPAT.md``. Descriptions are ours,
in our own words, but must carry the instructions of Hermes's that the model relies on (``INSTRUCTIONS``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx2
import pytest

from actors.platform.cron.tool import register_cronjob
from actors.platform.daemon.toolbox import build_toolbox
from config.loader import Config

ROOT = Path(__file__).parents[2]
HERMES = json.loads((ROOT / "tests/fixtures/hermes_0_19/tool_schemas.json").read_text(encoding="utf-8"))["tools"]
DIFFERENCES: dict[str, dict[str, str]] = json.loads(
    (ROOT / "tests/fixtures/hermes_schema_differences.json").read_text(encoding="utf-8")
)
COMPAT = (ROOT / "docs/HERMES_COMPAT.md").read_text(encoding="utf-8")
COMPARED_KEYS = (
    "type", "enum", "minimum", "maximum", "minItems", "maxItems", "minLength", "maxLength", "pattern", "default",
)
SHARED_TOOLS = frozenset({
    "read_file", "write_file", "patch", "search_files", "terminal", "process", "memory", "todo", "clarify",
    "session_search", "web_search", "web_extract", "execute_code", "delegate_task",
    "skills_list", "skill_view", "skill_manage", "cronjob",
    "browser_navigate", "browser_snapshot", "browser_click", "browser_type", "browser_scroll", "browser_back",
    "browser_press", "browser_get_images", "browser_console", "browser_vision",
})
"""Every tool this project has that Hermes Agent 0.19.0 registers too."""

INSTRUCTIONS: dict[str, dict[str, str]] = {
    "read_file": {
        "instead of cat/head/tail": r"instead of cat",
        "the LINE_NUM|CONTENT format": r"LINE_NUM\|CONTENT",
        "page with offset and limit": r"offset.{0,20}limit",
        "documents are extracted": r"\.docx",
        "binary files are not read": r"binary",
    },
    "write_file": {
        "instead of echo/cat heredoc": r"instead of echo",
        "overwrites the whole file": r"replacing it entirely|overwrites",
        "use patch for targeted edits": r"use patch",
        "parent directories created": r"parent directories",
        "syntax checked": r"syntax-checked",
    },
    "patch": {
        "instead of sed/awk": r"instead of sed",
        "replace mode's parameters": r"mode='replace'.{0,80}old_string",
        "V4A patch mode": r"mode='patch'.{0,40}V4A",
        "unique match unless replace_all": r"replace_all",
        "returns a unified diff": r"unified diff",
    },
    "search_files": {
        "instead of grep/rg/find/ls": r"instead of grep.{0,20}find.{0,10}ls",
        "target='content' searches inside files": r"target='content'",
        "target='files' finds files by glob, newest first": r"target='files'.{0,120}newest first",
        "output modes": r"files_only.{0,80}count",
    },
    "terminal": {
        "read files with read_file, not cat/head/tail": r"cat.{0,20}head.{0,20}tail.{0,60}read_file",
        "search with search_files, not grep/rg/find": r"grep.{0,20}rg.{0,20}find.{0,60}search_files",
        "list directories with search_files, not ls": r"\bls\b.{0,80}search_files\(target='files'\)",
        "edit with patch, not sed/awk": r"sed.{0,20}awk.{0,60}patch",
        "create files with write_file, not echo/heredoc": r"heredoc.{0,60}write_file",
        "state persists between calls": r"persist",
        "background with notify_on_complete": r"background=true.{0,120}notify_on_complete",
        "no nohup/&/setsid in the foreground": r"nohup",
        "interactive tools need pty": r"pty=true",
        "the foreground cap and a generous timeout": r"600",
    },
    "process": {
        "each action": r"list.{0,60}poll.{0,80}log.{0,80}wait.{0,120}kill.{0,80}write.{0,80}submit.{0,80}close",
        "for background processes": r"background=true",
    },
    "memory": {
        "one call with operations": r"operations",
        "applied all or nothing, limit on the final result": r"all or nothing.{0,80}final",
        "two targets": r"target='memory'.{0,200}target='user'",
        "what to skip": r"skip task progress",
        "do not repeat a finished update": r"do not repeat",
        "a full store: remove stale entries in the same call": r"full",
    },
    "todo": {
        "item format": r"\{id, content, status\}",
        "statuses": r"pending.{0,5}in_progress.{0,5}completed.{0,5}cancelled",
        "only one item in progress": r"one item in_progress",
        "merge by id": r"merge=true.{0,60}by id",
        "no arguments reads": r"no arguments to read",
        "list order is priority": r"order is (the |its )?priority",
        "complete at once, cancel a failure and add a revision": r"completed as soon as.{0,120}cancel",
        "3+ steps": r"3 or more steps",
        "returns the whole list": r"whole list",
    },
    "clarify": {
        "choices only in the choices array, never in the question": r"never (list|write|put) the (options|choices) in(side)? the question",
        "up to 4 choices and an 'Other' answer": r"up to 4 choices.{0,120}own words",
        "open-ended without choices": r"without choices",
        "not for approving dangerous commands": r"dangerous commands",
        "low-stakes: decide yourself": r"low.stakes",
    },
    "session_search": {
        "discovery with query": r"query -> discovery",
        "scroll with session_id + around_message_id": r"session_id \+ around_message_id",
        "read with session_id alone": r"session_id alone",
        "browse without arguments": r"no arguments -> recent",
        "scroll forward/back with the last/first id": r"last id to scroll forward.{0,20}first to scroll back",
        "match_message_id to scroll from a hit": r"match_message_id",
        "history is not proof of a source's current contents": r"not evidence",
        "FTS syntax": r"OR.{0,10}NOT",
        "an @session:<profile>/<id> link": r"@session:",
    },
    "web_search": {
        "returns titles, urls, descriptions": r"title, url, description",
        "operators may work": r"site:",
    },
    "web_extract": {
        "markdown of the page": r"markdown",
        "a long page: head and tail, full text saved, read_file for the rest": r"beginning and end.{0,120}read_file",
        "per-URL errors": r"error for that URL",
    },
    "execute_code": {
        "when: 3+ calls with processing between": r"3\+ tool calls",
        "when not: a single call": r"single call",
        "from hermes_tools import": r"from hermes_tools import",
        "print the result": r"print",
        "limits": r"300 s, 50 tool calls",
        "helpers": r"json_parse.{0,40}shell_quote.{0,40}retry",
    },
    "delegate_task": {
        "goal or tasks": r"`goal`.{0,80}`tasks`",
        "children cannot ask, remember, script, schedule": r"cannot ask the user",
        "fresh context": r"fresh context",
    },
    "skills_list": {
        "load one with skill_view": r"skill_view\(name\)",
    },
    "skill_view": {
        "linked files read with file_path": r"file_path",
    },
    "skill_manage": {
        "actions": r"create.{0,80}patch.{0,80}edit.{0,80}delete.{0,80}write_file.{0,30}remove_file",
        "when to create": r"five or more tool calls",
        "patch a skill that turned out wrong": r"patch it",
        "ask the user before creating": r"ask whether to save",
        "absorbed_into on delete": r"absorbed_into",
        "what a good skill holds": r"numbered steps",
    },
    "cronjob": {
        "actions": r"create.{0,200}list.{0,200}update.{0,40}pause.{0,40}resume.{0,40}remove.{0,40}run",
        "list before changing, never guess ids": r"never guess",
        "self-contained prompts": r"self-contained",
        "skills load before the prompt; [] clears them": r"skills=\[\] clears",
        "the final answer is delivered; no one to ask": r"no one (is )?(there )?to ask|nobody to ask|cannot ask",
        "runs do not schedule more jobs": r"(do not|never) schedule",
    },
    "browser_navigate": {
        "returns a compact snapshot with refs": r"compact snapshot.{0,80}ref",
        "prefer web_extract for reading": r"web_extract",
    },
    "browser_snapshot": {
        "refs like @e1 for click and type": r"@eN.{0,40}browser_click",
        "full=true for every node": r"full=true",
        "long snapshots cut and saved for read_file": r"15,000.{0,80}read_file",
    },
    "browser_click": {"by ref from the snapshot": r"ref.{0,20}snapshot"},
    "browser_type": {"replaces the field's text": r"replace"},
    "browser_scroll": {"up or down": r"up or down"},
    "browser_back": {"previous page": r"previous page"},
    "browser_press": {"Enter submits": r"Enter.{0,20}submits"},
    "browser_get_images": {"URL and alt text": r"URL.{0,20}alt text"},
    "browser_console": {
        "console and script errors": r"console output.{0,120}errors",
        "expression evaluates JavaScript": r"expression.{0,60}JavaScript",
        "clear": r"(Empty|clear) the record",
    },
    "browser_vision": {
        "the screenshot reaches a vision model": r"model takes images",
        "MEDIA: to share it": r"MEDIA:",
    },
}
"""Per tool, the instructions of Hermes's description the model relies on (idea: a pattern of ours)."""


def _our_schemas() -> dict[str, Mapping[str, Any]]:
    # Every registered tool, offered or not here (the web tools are hidden without a search backend);
    # cronjob is registered by the daemon beside its cron actor, which a schema does not need.
    registry = build_toolbox(Config(), httpx2.AsyncClient(), environ={}).registry
    register_cronjob(registry, lambda: None, approval_timeout=1.0)  # type: ignore[arg-type,return-value]  # a schema needs no cron actor: the lookup is never called
    return {name: registry.get(name).schema for name in registry.names()}  # type: ignore[union-attr]  # every name listed is registered


OURS = _our_schemas()


def drift(hermes: Mapping[str, Any], ours: Mapping[str, Any], path: str = "") -> Iterator[str]:
    """Each difference between two parameter schemas, as ``path: what``."""
    for key in COMPARED_KEYS:
        if hermes.get(key) != ours.get(key):
            yield f"{path or '(top)'}: {key} is {ours.get(key)!r}, Hermes has {hermes.get(key)!r}"
    if sorted(hermes.get("required", [])) != sorted(ours.get("required", [])):
        yield f"{path or '(top)'}: required is {sorted(ours.get('required', []))}, Hermes has {sorted(hermes.get('required', []))}"
    hermes_props, our_props = hermes.get("properties", {}), ours.get("properties", {})
    for name in sorted(set(hermes_props) | set(our_props)):
        where = f"{path}.{name}" if path else name
        if name not in our_props:
            yield f"{where}: missing here"
        elif name not in hermes_props:
            yield f"{where}: not in Hermes"
        else:
            yield from drift(hermes_props[name], our_props[name], where)
    if "items" in hermes or "items" in ours:
        yield from drift(hermes.get("items", {}), ours.get("items", {}), f"{path}.items" if path else "items")


def _text(schema: Mapping[str, Any]) -> str:
    """The description and every parameter's, as the model reads them, on one line."""
    parts = [schema.get("description", "")]

    def walk(node: Mapping[str, Any]) -> None:
        for prop in node.get("properties", {}).values():
            parts.append(prop.get("description", ""))
            walk(prop)
            walk(prop.get("items", {}))

    walk(schema["parameters"])
    return " ".join(" ".join(parts).split())


def _section(tool: str) -> str:
    """The Tools section of docs/HERMES_COMPAT.md whose heading names ``tool``."""
    for section in COMPAT.split("\n### ")[1:]:
        heading = section.split("\n", 1)[0]
        if f"`{tool}`" in heading:
            return section.split("\n## ", 1)[0]
    raise AssertionError(f"docs/HERMES_COMPAT.md has no section for {tool}")


class TestParameters:
    """A shared tool's parameters are Hermes's, but for the differences given with their reasons."""

    @pytest.mark.parametrize("tool", sorted(SHARED_TOOLS))
    def test_no_undeclared_drift(self, tool: str) -> None:
        declared = DIFFERENCES.get(tool, {})
        found = list(drift(HERMES[tool]["parameters"], OURS[tool]["parameters"]))
        undeclared = [d for d in found if d.split(":")[0] not in declared]
        assert not undeclared, "\n".join(undeclared)
        stale = set(declared) - {d.split(":")[0] for d in found}
        assert not stale, f"declared differences that no longer differ: {sorted(stale)}"

    def test_shared_tools_are_those_both_register(self) -> None:
        assert set(OURS) & set(HERMES) == SHARED_TOOLS
        assert set(DIFFERENCES) <= SHARED_TOOLS

    def test_the_drift_check_can_fail(self) -> None:
        hermes = {"type": "object", "properties": {"n": {"type": "integer", "maximum": 5}}, "required": ["n"]}
        ours = {"type": "object", "properties": {"n": {"type": "integer", "maximum": 9}, "extra": {"type": "string"}}}
        assert list(drift(hermes, ours)) == [
            "(top): required is [], Hermes has ['n']",
            "extra: not in Hermes",
            "n: maximum is 9, Hermes has 5",
        ]


class TestDifferencesDocumented:
    """Each difference kept on purpose is a 'differs by design' (or 'absent') row of its tool's section in
    docs/HERMES_COMPAT.md."""

    @pytest.mark.parametrize(
        ("tool", "path"), sorted((tool, path) for tool, paths in DIFFERENCES.items() for path in paths)
    )
    def test_a_row_names_it(self, tool: str, path: str) -> None:
        name = path.split(".")[0]
        rows = [line for line in _section(tool).splitlines() if re.search(r"\| (differs by design|absent) \|", line)]
        what = "`required`" if name == "(top)" else f"`{name}`"
        assert any(what in row for row in rows), f"no 'differs by design' or 'absent' row of {tool} names {what}"


class TestInstructions:
    """Our descriptions, in our own words, carry the instructions of Hermes's that the model relies on."""

    @pytest.mark.parametrize("tool", sorted(SHARED_TOOLS))
    def test_each_instruction_is_there(self, tool: str) -> None:
        text = _text(OURS[tool])
        missing = [idea for idea, pattern in INSTRUCTIONS[tool].items() if not re.search(pattern, text, re.IGNORECASE)]
        assert not missing, f"{tool}'s description does not say: {missing}"

    def test_every_shared_tool_has_its_list(self) -> None:
        assert set(INSTRUCTIONS) == SHARED_TOOLS

    def test_the_check_reads_parameter_descriptions(self) -> None:
        schema = {"description": "Top.", "parameters": {"properties": {"a": {"description": "Inner\n  text.",
                  "items": {"properties": {"b": {"description": "Deep."}}}}}}}
        assert _text(schema) == "Top. Inner text. Deep."
