"""System prompt assembly: identity, hints, guidance, project context files, memory and the session line, built once per session."""

from __future__ import annotations

from conversation.prompt.builder import (
    PromptSpec,
    assemble_system_prompt,
    build_subagent_prompt,
    build_system_prompt,
    environment_hint,
    needs_tool_use_enforcement,
    session_line,
)
from conversation.prompt.context_files import (
    MAX_CONTEXT_FILE_CHARS,
    ContextFile,
    blocked_line,
    discover_context_files,
    load_context_files,
    truncate_middle,
)

__all__ = [
    "MAX_CONTEXT_FILE_CHARS",
    "ContextFile",
    "PromptSpec",
    "assemble_system_prompt",
    "blocked_line",
    "build_subagent_prompt",
    "build_system_prompt",
    "discover_context_files",
    "environment_hint",
    "load_context_files",
    "needs_tool_use_enforcement",
    "session_line",
    "truncate_middle",
]
