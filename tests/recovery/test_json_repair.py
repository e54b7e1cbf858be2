"""Tool-call argument repair: the seeds' passes, and the result always parses to an object."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from providers.recovery import repair_tool_arguments

from .strategies import damaged_json, json_objects

TABLE = [
    ("valid", '{"path": "a.txt"}', {"path": "a.txt"}),
    ("raw control char (strict=False)", '{"text": "line1\nline2"}', {"text": "line1\nline2"}),
    ("trailing comma in object", '{"a": 1,}', {"a": 1}),
    ("trailing comma in array", '{"a": [1, 2, ], }', {"a": [1, 2]}),
    ("comma inside a string kept", '{"a": ",}"}', {"a": ",}"}),
    ("unclosed object", '{"a": 1', {"a": 1}),
    ("unclosed nested", '{"a": {"b": [1, 2', {"a": {"b": [1, 2]}}),
    ("unclosed string", '{"cmd": "ls -la', {"cmd": "ls -la"}),
    ("dangling colon", '{"a":', {"a": None}),
    ("dangling key", '{"a": 1, "b"', {"a": 1, "b": None}),
    ("skipped closer", '{"a": [1, 2}', {"a": [1, 2]}),
    ("excess closers", '{"a": 1}}}]', {"a": 1}),
    ("invalid escape", '{"path": "C:\\Users\\me"', {"path": "C:\\Users\\me"}),
    ("double encoded", json.dumps(json.dumps({"x": 1})), {"x": 1}),
    ("NaN dropped", '{"a": NaN}', {"a": None}),
    ("empty", "", {}),
    ("whitespace", "  \n", {}),
    ("none", None, {}),
    ("not an object", "[1, 2]", {}),
    ("garbage", "call the tool please", {}),
]


class TestRepairTable:
    """Each malformed input repairs to the expected object."""

    @pytest.mark.parametrize(("name", "raw", "expected"), TABLE, ids=[row[0] for row in TABLE])
    def test_row(self, name: str, raw: str | None, expected: dict[str, object]) -> None:
        assert expected == json.loads(repair_tool_arguments(raw, tool_name="t"))

    def test_excess_closers_bounded(self) -> None:
        # More than the pass's bound of 50 stray closers: give up cleanly.
        assert "{}" == repair_tool_arguments('{"a": 1}' + "}" * 60)

    def test_output_is_strict_json(self) -> None:
        out = repair_tool_arguments('{"a": "x\ty",}')
        assert {"a": "x\ty"} == json.loads(out)  # strict=True: the tab is escaped now


class TestRepairProperties:
    """Whatever the input, the output parses (strictly) to a dict; valid input keeps its value."""

    @settings(max_examples=300)
    @given(st.text(max_size=200))
    def test_any_text_gives_an_object(self, raw: str) -> None:
        assert isinstance(json.loads(repair_tool_arguments(raw)), dict)

    @settings(max_examples=300)
    @given(damaged_json())
    def test_damaged_json_gives_an_object(self, raw: str) -> None:
        out = repair_tool_arguments(raw)
        assert isinstance(json.loads(out), dict)
        out.encode("utf-8")

    @given(json_objects)
    def test_valid_input_round_trips(self, value: dict[str, object]) -> None:
        assert value == json.loads(repair_tool_arguments(json.dumps(value)))
