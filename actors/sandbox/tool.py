"""The ``execute_code`` tool: its schema and a handler that hands the script to the session's sandbox.

The description names exactly the functions the session's ``hermes_tools`` stub will have: both come
from :func:`~actors.sandbox.stubs.sandbox_tools` over the tools the session is offered (the registry
passes that set to the schema override when it builds a session's definitions).
"""

from __future__ import annotations

import sys
from typing import Any

from actors.sandbox.stubs import sandbox_tools
from config.sandbox import CodeExecutionConfig
from tools.context import ToolContext
from tools.errors import ToolInputError
from tools.registry import ToolRegistry
from tools.results import ToolResult

TOOL_NAME = "execute_code"
TOOLSET = "code_execution"


def execute_code_description(config: CodeExecutionConfig, offered: frozenset[str]) -> str:
    """The description a session offered the tools ``offered`` sees: the limits of ``config`` and the
    functions its scripts can call."""
    functions = sandbox_tools(offered)
    listing = ", ".join(sorted(functions)) or "none"
    foreground = " terminal() runs in the foreground only." if "terminal" in functions else ""
    return (
        "Run a Python script that calls tools through `from hermes_tools import ...`, so several tool calls "
        "with logic between them take one turn. Only what the script prints comes back to you; tool results "
        "stay inside the script. Prefer it when you need 3+ tool calls with processing in between, to filter "
        "large tool outputs, to branch on results or to loop over them; use normal tool calls for a single "
        "call or when you must read a result yourself.\n"
        f"Functions: {listing}.{foreground} "
        "They return parsed JSON (a dict). Helpers: json_parse(text), shell_quote(text), "
        "retry(fn, max_attempts=3, delay=2). Threads (concurrent.futures) may call tools in parallel.\n"
        "Use hermes_tools for all I/O and the standard library for processing; print the final result. "
        f"Limits: {config.timeout:g} s, {config.max_tool_calls} tool calls, {config.max_stdout_bytes} bytes "
        "of stdout. Each run is a fresh process with no state kept between runs. The script's own working "
        "directory is a temporary one, removed afterwards: open() and relative paths there do not reach the "
        "project; paths given to hermes_tools functions resolve against the session's working directory."
    )


def execute_code_schema(config: CodeExecutionConfig, offered: frozenset[str]) -> dict[str, Any]:
    """The tool schema for a session offered the tools ``offered``, stating the limits of ``config``."""
    return {
        "name": TOOL_NAME,
        "description": execute_code_description(config, offered),
        "parameters": {
            "type": "object",
            "properties": {"code": {"type": "string", "description": "Python source to run."}},
            "required": ["code"],
        },
    }


async def execute_code(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    """The tool handler: run ``args["code"]`` through the session's sandbox (``ctx.run_sandbox``).

    Raises:
        ToolInputError: no code.
        ToolError: the sandbox could not run the script.
    """
    code = args.get("code")
    if not isinstance(code, str) or not code.strip():
        raise ToolInputError("No code provided.")
    return await ctx.run_sandbox(code)


def register_execute_code(registry: ToolRegistry, config: CodeExecutionConfig) -> bool:
    """Register ``execute_code`` in the ``code_execution`` toolset; returns False (and registers nothing)
    on Windows, where the sandbox has no Unix sockets and the tool is left out of the schema."""
    if sys.platform == "win32":
        return False
    registry.register(TOOL_NAME, TOOLSET, execute_code_schema(config, frozenset(registry.names())), execute_code, emoji="🐍")
    registry.set_schema_override(TOOL_NAME, lambda offered: {"description": execute_code_description(config, offered)})
    return True
