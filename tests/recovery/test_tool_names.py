"""Fuzzy tool-name repair against the registered names."""

from __future__ import annotations

import pytest

from providers.recovery import normalize_tool_name, repair_tool_name

REGISTERED = ["read_file", "write_file", "web_search", "terminal", "execute_code", "delegate_task"]


class TestRepairToolName:
    """Misspelt names map to the registered one; unrelated names map to nothing."""

    @pytest.mark.parametrize(
        ("name", "expected"),
        [
            ("read_file", "read_file"),
            ("ReadFile", "read_file"),
            ("read-file", "read_file"),
            (" Write File ", "write_file"),
            ("web_serach", "web_search"),
            ("termnal", "terminal"),
            ("execute-cod", "execute_code"),
            ("browser_navigate", None),
            ("", None),
        ],
    )
    def test_repair(self, name: str, expected: str | None) -> None:
        assert expected == repair_tool_name(name, REGISTERED)

    def test_cutoff_is_respected(self) -> None:
        assert repair_tool_name("termnal", REGISTERED, cutoff=0.99) is None

    def test_normalize(self) -> None:
        assert "execute_code" == normalize_tool_name("ExecuteCode")
