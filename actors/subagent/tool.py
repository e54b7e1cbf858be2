"""The ``delegate_task`` tool: schema (stating the live limits), argument
parsing with clear errors, and the handler that hands off to the session."""

from __future__ import annotations

from typing import Any

import attrs

from config.delegation import DelegationConfig
from messages.untrusted import JsonSyntaxError, UntrustedJsonError
from messages.untrusted import loads as loads_untrusted
from tools.context import ToolContext
from tools.registry import ToolRegistry
from tools.results import ToolResult

__all__ = ["BLOCKED_IN_CHILDREN", "DelegationRequest", "InvalidDelegation", "Task", "parse_delegation", "register_delegate_task"]

TOOL_NAME = "delegate_task"

#: Tools a child never has (delegate_task only unless it may orchestrate): Hermes's list, ``cronjob``
#: among them so a child cannot schedule more work in its parent's name.
BLOCKED_IN_CHILDREN = frozenset({"delegate_task", "clarify", "memory", "send_message", "execute_code", "cronjob"})


class InvalidDelegation(ValueError):
    """The delegate_task arguments are unusable; ``str()`` is the text for the model."""


@attrs.frozen
class Task:
    """One child's assignment."""

    goal: str
    context: str | None = None
    role: str = "leaf"


@attrs.frozen
class DelegationRequest:
    """A parsed delegate_task call: one or more tasks, run at once."""

    tasks: tuple[Task, ...]


def _description(config: DelegationConfig) -> str:
    depth = "children cannot delegate further" if config.max_spawn_depth <= 1 else (
        f"orchestrator children may delegate down to depth {config.max_spawn_depth}"
    )
    return (
        "Delegate self-contained work to focused subagents that run in parallel with fresh context, "
        "then return their summaries. Give either one `goal` (with optional `context`) or `tasks`, "
        f"a list of at most {config.max_concurrent_children} {{goal, context, role}} objects that all run at once. "
        f"Each child has at most {config.max_iterations} iterations; {depth}. Children cannot ask the user "
        "questions, use memory, run execute_code or schedule jobs. Waits until every child has finished."
    )


def _schema(config: DelegationConfig) -> dict[str, Any]:
    task_props = {
        "goal": {"type": "string", "description": "What the child must achieve, stated completely."},
        "context": {"type": "string", "description": "Facts, paths and constraints the child needs."},
        "role": {
            "type": "string", "enum": ["leaf", "orchestrator"],
            "description": "orchestrator: may delegate further, while the depth limit allows (past it, a leaf).",
        },
    }
    return {
        "description": _description(config),
        "parameters": {
            "type": "object",
            "properties": {
                **task_props,
                "tasks": {
                    "type": ["array", "string"],
                    "items": {"type": "object", "properties": task_props, "required": ["goal"]},
                    "description": f"Up to {config.max_concurrent_children} tasks to run in parallel.",
                },
                "background": {
                    "type": "boolean",
                    "description": "Ignored (Hermes keeps it for old callers): the call returns when every child has finished.",
                },
            },
        },
    }


def register_delegate_task(registry: ToolRegistry, config: DelegationConfig) -> None:
    """Register ``delegate_task`` (toolset ``delegation``); its description states the live limits."""
    registry.register(TOOL_NAME, "delegation", _schema(config), _handler, emoji="🧑‍🤝‍🧑")
    registry.set_schema_override(TOOL_NAME, lambda offered: {"description": _description(config)})


async def _handler(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    return await ctx.delegate(args)


def parse_delegation(args: dict[str, Any], config: DelegationConfig) -> DelegationRequest:
    """Turn the model's arguments into tasks.

    Raises:
        InvalidDelegation: neither goal nor tasks; a task without goal; too many tasks; bad JSON.
    """
    raw_tasks = args.get("tasks")
    if isinstance(raw_tasks, str) and raw_tasks.strip():
        try:
            raw_tasks = loads_untrusted(raw_tasks)
        except JsonSyntaxError as exc:
            raise InvalidDelegation(f"'tasks' is not valid JSON: {exc.msg}. Pass a list of {{goal, context}} objects.") from exc
        except UntrustedJsonError as exc:
            raise InvalidDelegation(f"'tasks' {exc}. Pass a list of {{goal, context}} objects.") from exc
    if raw_tasks:
        if not isinstance(raw_tasks, list):
            raise InvalidDelegation("'tasks' must be a list of {goal, context, role} objects.")
        tasks = tuple(_task(item, index) for index, item in enumerate(raw_tasks))
    elif isinstance(args.get("goal"), str) and args["goal"].strip():
        tasks = (_task(args, 0),)
    else:
        raise InvalidDelegation("Provide either 'goal' (one task) or 'tasks' (a list of tasks).")
    if len(tasks) > config.max_concurrent_children:
        raise InvalidDelegation(
            f"Too many tasks: {len(tasks)} given, at most {config.max_concurrent_children} run at once "
            "(delegation.max_concurrent_children). Split the work into smaller batches."
        )
    return DelegationRequest(tasks)


def _task(item: Any, index: int) -> Task:
    if not isinstance(item, dict):
        raise InvalidDelegation(f"Task {index} must be an object with a 'goal'.")
    goal = item.get("goal")
    if not isinstance(goal, str) or not goal.strip():
        raise InvalidDelegation(f"Task {index} has no 'goal'; every task needs one.")
    context = item.get("context")
    role = item.get("role") or "leaf"
    if role not in ("leaf", "orchestrator"):
        raise InvalidDelegation(f"Task {index}: 'role' must be 'leaf' or 'orchestrator'.")
    return Task(goal.strip(), context if isinstance(context, str) else None, role)
