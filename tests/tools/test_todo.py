"""The todo tool and the session's TodoList."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.tools.helpers import model_view
from tools.testing import LocalToolContext
from tools.errors import ArgumentValidationError
from tools.todo import MAX_CONTENT_CHARS, MAX_ITEMS, TODO_SCHEMA, TodoList, TodoValidationError, todo_handler
from tools.validation import validate_arguments


@pytest.fixture
def ctx(tmp_path: Path) -> LocalToolContext:
    return LocalToolContext(home=tmp_path, cwd=tmp_path)


class TestTodoList:
    """Normalisation, caps, merge semantics and persistence."""

    def test_unknown_status_becomes_pending_and_last_duplicate_wins(self) -> None:
        todo = TodoList()
        todo.replace([
            {"id": "a", "content": "first", "status": "doing"},
            {"id": "b", "content": "second", "status": "in_progress"},
            {"id": "a", "content": "again", "status": "completed"},
        ])
        assert [
            {"id": "a", "content": "again", "status": "completed"},
            {"id": "b", "content": "second", "status": "in_progress"},
        ] == todo.to_dicts()

    def test_content_capped(self) -> None:
        todo = TodoList()
        todo.replace([{"id": "a", "content": "x" * (MAX_CONTENT_CHARS + 500)}])
        content = todo.items[0].content
        assert MAX_CONTENT_CHARS == len(content)
        assert content.endswith("[truncated]")

    def test_item_cap_keeps_the_head(self) -> None:
        """As in Hermes: past 256 items the first ones (list order is priority) are kept, the rest dropped."""
        todo = TodoList()
        assert 0 == todo.replace([{"id": str(i), "content": "c"} for i in range(MAX_ITEMS)])
        assert 1 == todo.merge([{"id": "new", "content": "one too many"}])
        assert MAX_ITEMS == len(todo.items) and "new" not in {item.id for item in todo.items}

    async def test_the_result_says_what_the_cap_dropped(self, tmp_path: Path) -> None:
        ctx = LocalToolContext(home=tmp_path, cwd=tmp_path)
        result = (await todo_handler({"todos": [{"id": str(i), "content": "c"} for i in range(MAX_ITEMS + 3)]}, ctx)).payload
        assert result["summary"]["total"] == MAX_ITEMS and "the last 3 were dropped" in result["note"]

    def test_merge_updates_fields_given_and_appends(self) -> None:
        todo = TodoList()
        todo.replace([{"id": "a", "content": "write code"}, {"id": "b", "content": "test"}])
        todo.merge([{"id": "a", "status": "completed"}, {"id": "c", "content": "ship", "status": "in_progress"}])
        assert [
            {"id": "a", "content": "write code", "status": "completed"},
            {"id": "b", "content": "test", "status": "pending"},
            {"id": "c", "content": "ship", "status": "in_progress"},
        ] == todo.to_dicts()

    @pytest.mark.parametrize(
        ("items", "message"),
        [
            ([{"content": "no id"}], "needs a non-empty 'id'"),
            ([{"id": "a"}], "needs non-empty 'content'"),
            (["just text"], "must be an object"),
        ],
    )
    def test_invalid_items(self, items: list[object], message: str) -> None:
        with pytest.raises(TodoValidationError, match=message):
            TodoList().replace(items)  # type: ignore[arg-type]  # deliberately wrong: the refusal is what the test checks

    def test_round_trip(self) -> None:
        todo = TodoList()
        todo.replace([{"id": 1, "content": "a", "status": "cancelled"}])
        assert todo.to_dicts() == TodoList.from_dicts(json.loads(json.dumps(todo.to_dicts()))).to_dicts()

    def test_summary(self) -> None:
        todo = TodoList.from_dicts([
            {"id": "1", "content": "a", "status": "completed"},
            {"id": "2", "content": "b", "status": "in_progress"},
            {"id": "3", "content": "c"},
        ])
        assert {"total": 3, "pending": 1, "in_progress": 1, "completed": 1, "cancelled": 0} == todo.summary()


class TestTodoHandler:
    """The tool reads, replaces and merges the context's list."""

    async def test_read_empty(self, ctx: LocalToolContext) -> None:
        result = await model_view(todo_handler, {}, ctx)
        assert {"todos": [], "summary": {"total": 0, "pending": 0, "in_progress": 0, "completed": 0, "cancelled": 0}} == result

    async def test_replace_then_merge(self, ctx: LocalToolContext) -> None:
        await todo_handler({"todos": [{"id": "a", "content": "x"}]}, ctx)
        result = await model_view(todo_handler, {"todos": [{"id": "a", "status": "completed"}], "merge": True}, ctx)
        assert [{"id": "a", "content": "x", "status": "completed"}] == result["todos"]
        assert [{"id": "a", "content": "x", "status": "completed"}] == ctx.todo.to_dicts()

    async def test_error_is_json(self, ctx: LocalToolContext) -> None:
        result = await model_view(todo_handler, {"todos": [{"id": "a"}]}, ctx)
        assert "needs non-empty 'content'" in result["error"]


class TestSchema:
    """As in Hermes, every item the model writes names its id, content and status."""

    def test_an_item_without_content_or_status_is_refused_before_the_handler(self) -> None:
        with pytest.raises(ArgumentValidationError, match=r"todos'?\[0\]\.content' is required.*todos'?\[0\]\.status' is required"):
            validate_arguments("todo", {"todos": [{"id": "a"}]}, TODO_SCHEMA["parameters"])
        whole = {"todos": [{"id": "a", "content": "do it", "status": "pending"}], "merge": True}
        assert validate_arguments("todo", whole, TODO_SCHEMA["parameters"]) == whole
