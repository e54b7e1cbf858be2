"""The clarify tool, as Hermes Agent's: at most four choices, the user's own words always allowed, a timeout that hands the choice back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.tools.helpers import model_view
from tools.builtin import register_core_tools
from tools.clarify import TIMEOUT_ANSWER, clarify_handler
from tools.dispatch import dispatch
from tools.errors import ClarifyTimedOut
from tools.registry import ToolRegistry
from tools.testing import LocalToolContext


def ctx_with(tmp_path: Path, **kwargs: Any) -> LocalToolContext:
    return LocalToolContext(home=tmp_path, cwd=tmp_path, **kwargs)


class TestClarify:
    """Questions reach the context's answerer; without one the model gets the seeds' error."""

    async def test_answer_returned_in_hermes_shape(self, tmp_path: Path) -> None:
        asked: list[tuple[str, list[str], bool]] = []

        async def answer(question: str, choices: list[str], freetext: bool) -> str:
            asked.append((question, choices, freetext))
            await trio.sleep(0)
            return choices[1]

        ctx = ctx_with(tmp_path, clarifier=answer)
        result = await model_view(clarify_handler, {"question": " Which DB? ", "choices": ["sqlite", "postgres"]}, ctx)
        assert {"question": "Which DB?", "choices_offered": ["sqlite", "postgres"], "user_response": "postgres"} == result
        assert [("Which DB?", ["sqlite", "postgres"], True)] == asked, "the user's own words are always allowed"

    async def test_an_open_question_offers_no_choices(self, tmp_path: Path) -> None:
        ctx = ctx_with(tmp_path, clarifier=lambda q, c, f: "the blue one")
        result = await model_view(clarify_handler, {"question": "Which one?"}, ctx)
        assert result == {"question": "Which one?", "choices_offered": None, "user_response": "the blue one"}

    async def test_a_timeout_hands_the_choice_back_to_the_model(self, tmp_path: Path) -> None:
        def nobody(question: str, choices: list[str], freetext: bool) -> str:
            raise ClarifyTimedOut

        result = await model_view(clarify_handler, {"question": "Which?", "choices": ["a", "b"]}, ctx_with(tmp_path, clarifier=nobody))
        assert result == {"question": "Which?", "choices_offered": ["a", "b"], "user_response": TIMEOUT_ANSWER}, (
            "Hermes's three fields, no flag of our own"
        )
        assert "best judgement" in TIMEOUT_ANSWER and "not available" not in TIMEOUT_ANSWER

    async def test_the_answer_is_trimmed(self, tmp_path: Path) -> None:
        ctx = ctx_with(tmp_path, clarifier=lambda q, c, f: "  postgres\n")
        result = await model_view(clarify_handler, {"question": "Which DB?"}, ctx)
        assert result["user_response"] == "postgres"

    @pytest.mark.parametrize("kwargs", [{}, {"clarifier": lambda q, c, f: "x", "interactive": False}])
    async def test_unavailable(self, tmp_path: Path, kwargs: dict[str, Any]) -> None:
        result = await model_view(clarify_handler, {"question": "Which?"}, ctx_with(tmp_path, **kwargs))
        assert {"error": "Clarify tool is not available in this execution context."} == result

    @pytest.mark.parametrize(
        ("args", "message"),
        [
            ({"question": "  "}, "question is empty"),
            ({"question": "q", "choices": "a, b"}, "'choices' must be an array"),
        ],
    )
    async def test_bad_arguments(self, tmp_path: Path, args: dict[str, Any], message: str) -> None:
        """Through the real tool path (the schema is checked first)."""
        registry = ToolRegistry()
        register_core_tools(registry)
        ctx = ctx_with(tmp_path, clarifier=lambda q, c, f: "never asked")
        reply = await dispatch(registry, "clarify", args, ctx)
        assert not reply.ok and message in json.loads(reply.text)["error"]


class TestLooseChoices:
    """Choices a model sends off-schema are read as Hermes reads them, not refused."""

    @pytest.mark.parametrize(
        ("choices", "offered"),
        [
            ([str(i) for i in range(6)], ["0", "1", "2", "3"]),
            ([{"label": "staging"}, {"description": "prod"}, {"name": "id-7"}, " ", None], ["staging", "prod"]),
            ([{"text": "a", "label": "A"}, 3], ["A", "3"]),
            ([{"value": "x"}], None),
        ],
    )
    async def test_through_the_real_tool_path(self, tmp_path: Path, choices: list[Any], offered: list[str] | None) -> None:
        asked: list[list[str]] = []

        async def answer(question: str, choices: list[str], freetext: bool) -> str:
            asked.append(choices)
            return "fine"

        registry = ToolRegistry()
        register_core_tools(registry)
        reply = await dispatch(registry, "clarify", {"question": "Where?", "choices": choices}, ctx_with(tmp_path, clarifier=answer))
        assert reply.ok and json.loads(reply.text)["choices_offered"] == offered
        assert asked == [offered or []]
