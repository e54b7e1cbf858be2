"""The ``todo`` tool: a per-session task list the model keeps for itself.

``TodoList`` is the session's state object (serialisable to plain dicts so the
session can persist it); ``todo_handler`` is the tool.  Items are
``{id, content, status}``; an unknown status becomes ``pending``, the last of
several items with the same id wins, content is capped at 4,000 characters
and, as in Hermes Agent, a list longer than 256 items keeps its first 256
(list order is priority) and the result says how many were dropped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final

import attrs

from tools.errors import ToolInputError
from tools.results import ToolResult

if TYPE_CHECKING:
    from tools.context import ToolContext

__all__ = [
    "MAX_CONTENT_CHARS",
    "MAX_ITEMS",
    "STATUSES",
    "TODO_SCHEMA",
    "TodoItem",
    "TodoList",
    "TodoValidationError",
    "todo_handler",
]

STATUSES: Final = ("pending", "in_progress", "completed", "cancelled")
MAX_CONTENT_CHARS: Final = 4_000
MAX_ITEMS: Final = 256
_TRUNCATION_MARK = " [truncated]"


class TodoValidationError(ToolInputError):
    """A todo update that cannot be applied; the message is for the model."""


@attrs.frozen
class TodoItem:
    """One task: a stable id, what to do, and where it stands."""

    id: str
    content: str
    status: str = "pending"


def _cap_content(content: str) -> str:
    if len(content) <= MAX_CONTENT_CHARS:
        return content
    return content[: MAX_CONTENT_CHARS - len(_TRUNCATION_MARK)] + _TRUNCATION_MARK


def _normalise_status(status: object) -> str:
    return status if isinstance(status, str) and status in STATUSES else "pending"


def _item_id(raw: Mapping[str, Any], index: int) -> str:
    value = raw.get("id")
    if isinstance(value, bool) or not isinstance(value, (str, int)) or str(value).strip() == "":
        raise TodoValidationError(f"todos[{index}] needs a non-empty 'id' (string)")
    return str(value).strip()


@attrs.define
class TodoList:
    """A session's todo items, in order.

    Mutable state owned by one session; handlers change it only through
    ``replace`` and ``merge``, which validate first and change nothing on error.
    """

    _items: list[TodoItem] = attrs.field(factory=list, alias="items")

    @property
    def items(self) -> tuple[TodoItem, ...]:
        """The current items, in order."""
        return tuple(self._items)

    def replace(self, raw_items: Iterable[Mapping[str, Any]]) -> int:
        """Replace the whole list; how many items past the cap were dropped.

        Raises:
            TodoValidationError: an item lacks an id or content.
        """
        staged: dict[str, TodoItem] = {}
        for index, raw in enumerate(_as_mappings(raw_items)):
            item_id = _item_id(raw, index)
            content = raw.get("content")
            if not isinstance(content, str) or not content.strip():
                raise TodoValidationError(f"todos[{index}] (id {item_id!r}) needs non-empty 'content'")
            # Last duplicate wins, but keeps the place of the first occurrence.
            staged[item_id] = TodoItem(item_id, _cap_content(content), _normalise_status(raw.get("status")))
        return self._commit(staged)

    def merge(self, raw_items: Iterable[Mapping[str, Any]]) -> int:
        """Update items by id (only the fields given) and append new ones; how many past the cap were dropped.

        Raises:
            TodoValidationError: a new item lacks content.
        """
        staged = {item.id: item for item in self._items}
        for index, raw in enumerate(_as_mappings(raw_items)):
            item_id = _item_id(raw, index)
            current = staged.get(item_id)
            content = raw.get("content")
            if content is not None and not isinstance(content, str):
                raise TodoValidationError(f"todos[{index}] (id {item_id!r}): 'content' must be a string")
            if current is None:
                if not content or not content.strip():
                    raise TodoValidationError(f"todos[{index}] (id {item_id!r}) is new and needs 'content'")
                staged[item_id] = TodoItem(item_id, _cap_content(content), _normalise_status(raw.get("status")))
                continue
            changes: dict[str, str] = {}
            if content:
                changes["content"] = _cap_content(content)
            if "status" in raw:
                changes["status"] = _normalise_status(raw["status"])
            staged[item_id] = attrs.evolve(current, **changes)
        return self._commit(staged)

    def _commit(self, staged: dict[str, TodoItem]) -> int:
        items = list(staged.values())
        self._items = items[:MAX_ITEMS]
        return len(items) - len(self._items)

    def summary(self) -> dict[str, int]:
        """Counts per status plus ``total``."""
        counts = {status: 0 for status in STATUSES}
        for item in self._items:
            counts[item.status] += 1
        return {"total": len(self._items), **counts}

    def to_dicts(self) -> list[dict[str, str]]:
        """Plain dicts for persistence and for the tool result."""
        return [attrs.asdict(item) for item in self._items]

    @classmethod
    def from_dicts(cls, data: Iterable[Mapping[str, Any]]) -> TodoList:
        """Rebuild a list saved with ``to_dicts`` (normalising as ``replace`` does)."""
        todo = cls()
        todo.replace(data)
        return todo


def _as_mappings(raw_items: Iterable[Any]) -> list[Mapping[str, Any]]:
    items = list(raw_items)
    for index, raw in enumerate(items):
        if not isinstance(raw, Mapping):
            raise TodoValidationError(f"todos[{index}] must be an object with id, content and status")
    return items


TODO_SCHEMA: Final[dict[str, Any]] = {
    "name": "todo",
    "description": (
        "Keep a task list for the current session: use it for work with 3 or more steps, or when the user "
        "gives several tasks. Call with no arguments to read it. Pass `todos` to replace the whole list "
        "with a fresh plan, or with merge=true to update items by id and append new ones. Each item is "
        "{id, content, status}, status one of pending, in_progress, completed, cancelled; the list's order is "
        "its priority. Keep only one item in_progress at a time. Mark an item completed as soon as it is done; "
        "when one fails, cancel it and add a revised item. Every call answers with the whole list."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "todos": {
                "type": "array",
                "description": "The items to write. Omit to read the current list.",
                "items": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string", "description": "The item's unique, stable identifier."},
                        "content": {"type": "string", "description": "What to do (max 4,000 characters)."},
                        "status": {"type": "string", "enum": list(STATUSES), "description": "Where the item stands."},
                    },
                    "required": ["id", "content", "status"],
                },
            },
            "merge": {
                "type": "boolean",
                "description": "true: update items by id and append new ones; false (default): replace the list.",
                "default": False,
            },
        },
        "required": [],
    },
}


async def todo_handler(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    """Read, replace or merge the session's todo list; returns the list and counts.

    Raises:
        TodoValidationError: the update cannot be applied (the list is left as it was).
    """
    todos = args.get("todos")
    dropped = 0
    if todos is not None:
        dropped = ctx.todo.merge(todos) if args.get("merge", False) else ctx.todo.replace(todos)
    result: dict[str, Any] = {"todos": ctx.todo.to_dicts(), "summary": ctx.todo.summary()}
    if dropped:
        result["note"] = (
            f"The list is capped at {MAX_ITEMS} items: the last {dropped} were dropped. Remove completed or "
            "cancelled items, or group small steps into one item."
        )
    return ToolResult(result)
