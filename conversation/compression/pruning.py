"""Phase 1 of compression: cheap pruning before any model call (docs/DECISIONS.md#d-compression).

Outside the protected tail: large tool results become one-line summaries that say what the call did;
a result identical to a later one is replaced by a pointer (the newest full copy stays); long string
values inside tool-call arguments are shortened by parsing, shrinking the string leaves and
re-serialising, so the arguments stay valid JSON; old inline images are replaced by a short note.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from messages.chat import (
    AssistantMessage, ChatMessage, Content, ContentPart, ImagePart, RawPart, TextPart, ToolMessage, content_to_dict,
)
from messages.untrusted import UntrustedJsonError
from messages.untrusted import loads as loads_untrusted

# Tool results shorter than this are already cheap; they are left as they are.
PRUNE_MIN_CHARS = 400
# String values in tool-call arguments longer than this are shortened.
# Identical results shorter than this are left alone: a pointer would save nothing.
DEDUPE_MIN_CHARS = 40
ARGUMENT_STRING_LIMIT = 400
ARGUMENT_KEEP_CHARS = 200
IMAGE_PLACEHOLDER = "[screenshot removed to save context]"


@attrs.frozen
class PruneStats:
    """What phase 1 changed."""

    results_summarised: int = 0
    duplicates_removed: int = 0
    arguments_shrunk: int = 0
    images_removed: int = 0

    @property
    def changed(self) -> int:
        """Total number of edits."""
        return self.results_summarised + self.duplicates_removed + self.arguments_shrunk + self.images_removed


def _parse_json(text: Any) -> Any:
    if not isinstance(text, str):
        return None
    try:
        return loads_untrusted(text)
    except UntrustedJsonError:
        return None


def _quote(value: Any, limit: int = 80) -> str:
    text = " ".join(str(value).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _line_count(result: Any) -> int:
    if isinstance(result, dict):
        output = result.get("output", result.get("stdout", ""))
        return len(str(output).splitlines())
    return 0


def _match_count(result: Any) -> int | None:
    if not isinstance(result, dict):
        return None
    for key in ("total_count", "count", "total"):
        count = result.get(key)
        if isinstance(count, int):
            return count
    for key in ("matches", "files", "results"):
        if isinstance(result.get(key), list):
            return len(result[key])
    return None


def summarise_tool_result(name: str, arguments: Mapping[str, Any], content: str) -> str:
    """A one-line description of a tool call and its result, replacing the full result."""
    result = _parse_json(content)
    size = f"{len(content):,} chars"
    if name == "terminal":
        exit_code = result.get("exit_code") if isinstance(result, dict) else None
        status = f"exit {exit_code}" if exit_code is not None else "finished"
        return f"[terminal] ran `{_quote(arguments.get('command', ''))}` -> {status}, {_line_count(result)} lines output"
    if name == "read_file":
        return f"[read_file] read {arguments.get('path', '?')} from line {arguments.get('offset', 1)} ({size})"
    if name == "search_files":
        matches = _match_count(result)
        found = f"{matches} matches" if matches is not None else size
        where = arguments.get("path", ".")
        return f"[search_files] content search for '{_quote(arguments.get('pattern', ''), 60)}' in {where} -> {found}"
    if name == "delegate_task":
        goal = arguments.get("goal") or arguments.get("task") or "tasks"
        return f"[delegate_task] '{_quote(goal, 60)}' ({size} result)"
    preview = _quote(json.dumps(dict(arguments), ensure_ascii=False), 100)
    return f"[{name}] {preview} ({size} result)"


def shrink_json_strings(value: Any, limit: int = ARGUMENT_STRING_LIMIT, keep: int = ARGUMENT_KEEP_CHARS) -> tuple[Any, bool]:
    """Return ``value`` with every string leaf longer than ``limit`` cut to ``keep`` chars plus a note."""
    if isinstance(value, str):
        if len(value) <= limit:
            return value, False
        return f"{value[:keep]}…[truncated {len(value) - keep:,} chars]", True
    if isinstance(value, list):
        items = [shrink_json_strings(item, limit, keep) for item in value]
        return [item for item, _ in items], any(changed for _, changed in items)
    if isinstance(value, dict):
        pairs = {key: shrink_json_strings(item, limit, keep) for key, item in value.items()}
        return {key: item for key, (item, _) in pairs.items()}, any(changed for _, changed in pairs.values())
    return value, False


def _shrink_arguments(message: AssistantMessage) -> AssistantMessage | None:
    """The message with its calls' long argument strings cut, or None when none was."""
    calls = []
    for call in message.tool_calls:
        parsed = _parse_json(call.arguments)
        smaller, changed = shrink_json_strings(parsed) if parsed is not None else (None, False)
        calls.append(attrs.evolve(call, arguments=json.dumps(smaller, ensure_ascii=False)) if changed else call)
    if all(new is old for new, old in zip(calls, message.tool_calls, strict=True)):
        return None
    return attrs.evolve(message, tool_calls=tuple(calls))


def _is_image(part: ContentPart) -> bool:
    return isinstance(part, ImagePart) or (isinstance(part, RawPart) and part.data.get("type") in ("image_url", "image", "input_image"))


def _content_key(content: Content) -> str:
    return content if isinstance(content, str) else json.dumps(content_to_dict(content), sort_keys=True, ensure_ascii=False)


def prune_old_tool_results(
    messages: Sequence[ChatMessage], protect_from: int, *, start: int = 0
) -> tuple[list[ChatMessage], PruneStats]:
    """Apply phase 1 to ``messages[start:protect_from]``; the protected head and tail are copied unchanged.

    Returns:
        The new history (same length, same roles and ids) and what was changed.
    """
    history = list(messages)
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    for message in history:
        if isinstance(message, AssistantMessage):
            for call in message.tool_calls:
                arguments = _parse_json(call.arguments)
                calls[call.id] = (call.name, arguments if isinstance(arguments, dict) else {})
    newest: dict[str, int] = {}
    for index, message in enumerate(history):
        if isinstance(message, ToolMessage):
            newest[_content_key(message.content)] = index
    summarised = duplicates = shrunk = images = 0
    for index in range(start, min(protect_from, len(history))):
        message = history[index]
        if isinstance(message, AssistantMessage):
            smaller = _shrink_arguments(message)
            if smaller is not None:
                shrunk += sum(new is not old for new, old in zip(smaller.tool_calls, message.tool_calls, strict=True))
                history[index] = smaller
            continue
        if not isinstance(message, ToolMessage):
            continue
        name, arguments = calls.get(message.tool_call_id, (message.name or "tool", {}))
        content = message.content
        if newest.get(_content_key(content), index) > index and len(_content_key(content)) >= DEDUPE_MIN_CHARS:
            history[index] = attrs.evolve(message, content=f"[{name}] result identical to a later {name} result; see that one")
            duplicates += 1
        elif isinstance(content, str) and len(content) >= PRUNE_MIN_CHARS:
            history[index] = attrs.evolve(message, content=summarise_tool_result(name, arguments, content))
            summarised += 1
        elif isinstance(content, tuple) and any(_is_image(part) for part in content):
            images += sum(_is_image(part) for part in content)
            parts = tuple(TextPart(IMAGE_PLACEHOLDER) if _is_image(part) else part for part in content)
            history[index] = attrs.evolve(message, content=parts)
    return history, PruneStats(summarised, duplicates, shrunk, images)
