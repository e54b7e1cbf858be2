"""Registration of the core tools: files, search, memory, todo and clarify.

The terminal, process and web tools register through their own modules
(``register_terminal_tools``, ``register_web_tools``); the daemon composes
them into one registry.
"""

from __future__ import annotations

from config.tools import MemoryConfig, ToolsConfig
from tools.clarify import CLARIFY_SCHEMA, clarify_handler, loosen_choices
from tools.files import (
    PATCH_SCHEMA,
    READ_FILE_SCHEMA,
    WRITE_FILE_SCHEMA,
    check_patch_args,
    check_write_file_args,
    patch_handler,
    read_file_handler,
    write_file_handler,
)
from tools.memory import make_memory_handler
from tools.registry import ToolRegistry
from tools.search import SEARCH_FILES_SCHEMA, make_search_handler
from tools.todo import TODO_SCHEMA, todo_handler

__all__ = ["CORE_TOOL_NAMES", "register_core_tools"]

CORE_TOOL_NAMES = frozenset({"read_file", "write_file", "patch", "search_files", "memory", "todo", "clarify"})


def register_core_tools(
    registry: ToolRegistry, config: ToolsConfig | None = None, memory: MemoryConfig | None = None
) -> None:
    """Register read_file, write_file, patch, search_files, memory, todo and clarify in ``registry``."""
    config = config if config is not None else ToolsConfig()
    memory_schema, memory_handler = make_memory_handler(memory)
    # File tools may run side by side when their paths do not overlap.
    for name, schema, handler, emoji, check_args in (
        ("read_file", READ_FILE_SCHEMA, read_file_handler, "📖", None),
        ("write_file", WRITE_FILE_SCHEMA, write_file_handler, "✍️", check_write_file_args),
        ("patch", PATCH_SCHEMA, patch_handler, "🩹", check_patch_args),
    ):
        registry.register(
            name, "file", schema, handler, parallel_safe=True, path_scoped="path", emoji=emoji, check_args=check_args
        )
    registry.register(
        "search_files", "file", SEARCH_FILES_SCHEMA, make_search_handler(use_ripgrep=config.use_ripgrep),
        parallel_safe=True, emoji="🔎",
    )
    # memory and todo change shared state whose order matters within a batch: sequential.
    registry.register("memory", "memory", memory_schema, memory_handler, emoji="🧠")
    registry.register("todo", "todo", TODO_SCHEMA, todo_handler, emoji="📋")
    registry.register("clarify", "clarify", CLARIFY_SCHEMA, clarify_handler, emoji="❓", loosen=loosen_choices)
