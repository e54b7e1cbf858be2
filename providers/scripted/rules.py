"""Rule mode: a deterministic scripted 'model' for the no-key demo.

It reads the conversation in whichever wire format arrived and plays a fixed
plan, clearly labelled as scripted: ``terminal`` (``uname -a``), then
``execute_code`` with a short script making several ``hermes_tools`` calls,
then ``delegate_task`` with two tasks, then a final summary quoting what the
tools returned. A subagent conversation (its system prompt says "you are a
subagent" or names "YOUR TASK:") gets one short tool call and an answer. A tool the request does not
offer is skipped; "no tools" in the user message gets a plain answer.
"""

from __future__ import annotations

import json
import re
from typing import Any

import attrs

from .steps import Step, ToolCallSpec

LABEL = "[scripted model]"

DEMO_SCRIPT = """\
from hermes_tools import terminal, read_file
import json

who = terminal("whoami")
where = terminal("pwd")
py = terminal("python3 --version")
try:
    os_release = read_file("/etc/os-release")
except Exception as exc:
    os_release = {"error": str(exc)}
print(json.dumps({
    "whoami": str(who.get("output", who)).strip(),
    "pwd": str(where.get("output", where)).strip(),
    "python": str(py.get("output", py)).strip(),
    "os_release_read": "error" not in os_release,
}))
"""

DEMO_TASKS = (
    {"goal": "Count the entries in the current working directory and report the number.", "toolsets": ["terminal"]},
    {"goal": "Report the operating system kernel name and release.", "toolsets": ["terminal"]},
)

_QUOTE_CHARS = 300


@attrs.frozen
class Conversation:
    """The parts of a request the rules look at, whatever its wire format."""

    system: str
    last_user: str
    results: tuple[tuple[str, str], ...]  # (tool name, output) after the last user message
    tools: dict[str, dict[str, Any]]  # offered tool name -> its parameter schema


def rule_step(path: str, body: dict[str, Any]) -> Step:
    """The reply the rules give to this request."""
    conv = read_conversation(path, body)
    if _is_subagent(conv.system):
        return _subagent(conv)
    if "no tools" in conv.last_user.lower():
        return Step(text=f"{LABEL} You asked for no tools, so here is a plain answer to: {conv.last_user[:200]}")
    done = {name for name, _ in conv.results}
    n = len(conv.results)
    if "terminal" in conv.tools and not done:
        return _call(n, "terminal", {"command": "uname -a"}, "Let me look at the machine first.")
    if "execute_code" in conv.tools and "execute_code" not in done:
        return _call(n, "execute_code", {"code": DEMO_SCRIPT}, "Now a short script that calls several tools at once.")
    if "delegate_task" in conv.tools and "delegate_task" not in done:
        params = conv.tools["delegate_task"].get("properties", {})
        if "tasks" in params:
            return _call(n, "delegate_task", {"tasks": list(DEMO_TASKS)}, "Two small jobs for subagents, in parallel.")
        calls = tuple(
            ToolCallSpec(id=f"call_demo_{n + i}", name="delegate_task", arguments=json.dumps({"goal": t["goal"]}))
            for i, t in enumerate(DEMO_TASKS)
        )
        return Step(text=f"{LABEL} Two small jobs for subagents, in parallel.", tool_calls=calls)
    return Step(text=_summary(conv))


def _is_subagent(system: str) -> bool:
    # A parent's prompt may mention subagents; a child's says what it is and names its task.
    lowered = system.lower()
    return "your task:" in lowered or re.search(r"\byou are an? (?:\w+ )?subagent\b", lowered) is not None


def _call(n: int, name: str, arguments: dict[str, Any], text: str) -> Step:
    spec = ToolCallSpec(id=f"call_demo_{n}", name=name, arguments=json.dumps(arguments))
    return Step(text=f"{LABEL} {text}", tool_calls=(spec,))


def _subagent(conv: Conversation) -> Step:
    goal = _goal(conv)
    if not conv.results and "terminal" in conv.tools:
        return _call(0, "terminal", {"command": "ls -1 | wc -l && uname -sr"}, f"Working on: {goal}")
    quoted = "; ".join(f"{name} said {_quote(out, 160)}" for name, out in conv.results) or "no tools were needed"
    return Step(text=f"{LABEL} Subagent done with: {goal.rstrip('.')}. Findings: {quoted}.")


def _goal(conv: Conversation) -> str:
    marker = "YOUR TASK:"
    if marker in conv.system:
        tail = conv.system.split(marker, 1)[1].strip()
        return tail.split("\n\n", 1)[0].strip()[:200]
    return conv.last_user[:200] or "the delegated task"


def _summary(conv: Conversation) -> str:
    lines = [f"{LABEL} Demo complete. This answer comes from the scripted provider's rule mode, not a real model."]
    if conv.results:
        lines.append("What the tools returned:")
        lines += [f"- {name}: {_quote(out, _QUOTE_CHARS)}" for name, out in conv.results]
    else:
        lines.append(f"No tools were offered, so I can only echo your message: {conv.last_user[:200]}")
    return "\n".join(lines)


def _quote(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return f'"{flat[:limit]}{"..." if len(flat) > limit else ""}"'


def read_conversation(path: str, body: dict[str, Any]) -> Conversation:
    """Normalize a request of any of the three wire formats."""
    if path.endswith("/messages"):
        return _from_anthropic(body)
    if path.endswith("/responses"):
        return _from_responses(body)
    return _from_chat(body)


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = []
    for part in content:
        if isinstance(part, dict):
            if part.get("type") == "tool_result":
                parts.append(_text(part.get("content")))
            elif "text" in part:
                parts.append(str(part["text"]))
    return "\n".join(parts)


def _schemas(tools: list[dict[str, Any]] | None, *, key: str) -> dict[str, dict[str, Any]]:
    out = {}
    for tool in tools or ():
        fn = tool.get("function", tool)
        if "name" in fn:
            out[fn["name"]] = fn.get(key) or {}
    return out


def _from_chat(body: dict[str, Any]) -> Conversation:
    system, last_user = "", ""
    names: dict[Any, str] = {}  # keyed by the ids the request gave, which may be missing
    results: list[tuple[str, str]] = []
    for msg in body.get("messages") or ():
        role = msg.get("role")
        if role in ("system", "developer"):
            system += _text(msg.get("content")) + "\n"
        elif role == "user":
            last_user, results = _text(msg.get("content")), []
        elif role == "assistant":
            for call in msg.get("tool_calls") or ():
                names[call.get("id")] = call.get("function", {}).get("name", "")
        elif role == "tool":
            results.append((names.get(msg.get("tool_call_id"), "tool"), _text(msg.get("content"))))
    return Conversation(system, last_user, tuple(results), _schemas(body.get("tools"), key="parameters"))


def _from_anthropic(body: dict[str, Any]) -> Conversation:
    system = _text(body.get("system"))
    last_user = ""
    names: dict[Any, str] = {}  # keyed by the ids the request gave, which may be missing
    results: list[tuple[str, str]] = []
    for msg in body.get("messages") or ():
        content = msg.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content or ""}]
        if msg.get("role") == "assistant":
            for block in blocks:
                if block.get("type") == "tool_use":
                    names[block.get("id")] = block.get("name", "")
            continue
        tool_results = [b for b in blocks if b.get("type") == "tool_result"]
        text = "\n".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text").strip()
        if text and not tool_results:
            last_user, results = text, []
        for block in tool_results:
            results.append((names.get(block.get("tool_use_id"), "tool"), _text(block.get("content"))))
    return Conversation(system, last_user, tuple(results), _schemas(body.get("tools"), key="input_schema"))


def _from_responses(body: dict[str, Any]) -> Conversation:
    system = str(body.get("instructions") or "")
    last_user = ""
    names: dict[Any, str] = {}  # keyed by the ids the request gave, which may be missing
    results: list[tuple[str, str]] = []
    items = body.get("input")
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    for item in items or ():
        kind = item.get("type")
        if kind == "function_call":
            names[item.get("call_id")] = item.get("name", "")
        elif kind == "function_call_output":
            results.append((names.get(item.get("call_id"), "tool"), str(item.get("output", ""))))
        elif item.get("role") in ("system", "developer"):
            system += "\n" + _text(item.get("content"))
        elif item.get("role") == "user":
            content = item.get("content")
            last_user = content if isinstance(content, str) else "\n".join(str(p.get("text", "")) for p in content)
            results = []
    return Conversation(system, last_user, tuple(results), _schemas(body.get("tools"), key="parameters"))
