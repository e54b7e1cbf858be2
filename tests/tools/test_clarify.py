"""The clarify tool."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

from tests.tools.helpers import model_view
from tools.clarify import clarify_handler
from tools.testing import LocalToolContext


def ctx_with(tmp_path: Path, **kwargs: Any) -> LocalToolContext:
    return LocalToolContext(home=tmp_path, cwd=tmp_path, **kwargs)


class TestClarify:
    """Questions reach the context's answerer; without one the model gets the seeds' error."""

    async def test_answer_returned(self, tmp_path: Path) -> None:
        asked: list[tuple[str, list[str], bool]] = []

        async def answer(question: str, choices: list[str], freetext: bool) -> str:
            asked.append((question, choices, freetext))
            await trio.sleep(0)
            return choices[1]

        ctx = ctx_with(tmp_path, clarifier=answer)
        result = await model_view(clarify_handler, {"question": " Which DB? ", "choices": ["sqlite", "postgres"], "allow_freetext": False}, ctx)
        assert {"question": "Which DB?", "answer": "postgres"} == result
        assert [("Which DB?", ["sqlite", "postgres"], False)] == asked

    @pytest.mark.parametrize("kwargs", [{}, {"clarifier": lambda q, c, f: "x", "interactive": False}])
    async def test_unavailable(self, tmp_path: Path, kwargs: dict[str, Any]) -> None:
        result = await model_view(clarify_handler, {"question": "Which?"}, ctx_with(tmp_path, **kwargs))
        assert {"error": "Clarify tool is not available in this execution context."} == result

    @pytest.mark.parametrize(
        ("args", "message"),
        [
            ({"question": "  "}, "question is empty"),
            ({"question": "q", "choices": [str(i) for i in range(7)]}, "at most 6"),
            ({"question": "q", "choices": [], "allow_freetext": False}, "Give choices"),
        ],
    )
    async def test_bad_arguments(self, tmp_path: Path, args: dict[str, Any], message: str) -> None:
        ctx = ctx_with(tmp_path, clarifier=lambda q, c, f: "never asked")
        assert message in (await model_view(clarify_handler, args, ctx))["error"]
