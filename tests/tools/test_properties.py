"""Property tests: validation, threat scan and the gate hold for any input (redaction: test_redact.py)."""

from __future__ import annotations

from typing import Any

import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.strategies import json_values
from tests.tools.helpers import echo_handler
from tools.errors import ArgumentValidationError
from tools.parallel import ToolConcurrencyGate, _Claim, _claim
from tools.registry import ToolRegistry
from tools.threats import find_threats
from tools.validation import validate_arguments

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "minLength": 1},
        "n": {"type": "integer", "minimum": 0, "maximum": 10},
        "flags": {"type": "array", "items": {"type": "boolean"}, "maxItems": 3},
        "mode": {"type": "string", "enum": ["a", "b"]},
        "nested": {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]},
    },
    "required": ["path"],
}


class TestValidationProperties:
    """Any JSON value either validates or raises ArgumentValidationError; valid output re-validates unchanged."""

    @given(json_values | st.dictionaries(st.sampled_from(["path", "n", "flags", "mode", "nested", "zz"]), json_values))
    @settings(max_examples=150, deadline=None)
    def test_total(self, args: Any) -> None:
        try:
            checked = validate_arguments("t", args, SCHEMA)
        except ArgumentValidationError as exc:
            assert str(exc).startswith("Invalid arguments for t: ")
            return
        assert checked == validate_arguments("t", checked, SCHEMA)


class TestThreatScanProperties:
    """The threat scan never raises and names each threat once."""

    @given(st.text())
    @settings(max_examples=200, deadline=None)
    def test_threat_scan_total(self, text: str) -> None:
        names = find_threats(text)
        assert len(names) == len(set(names))


CALLS = st.lists(
    st.tuples(
        st.sampled_from(["read_file", "write_file", "terminal", "web_search"]),
        st.sampled_from(["a", "a/b", "a/b/c", "b", "c/d", "."]),
        st.integers(1, 3),
    ),
    min_size=1,
    max_size=12,
)


class TestGateProperties:
    """Whatever arrives, no two conflicting calls run together, the limit holds, and every call runs."""

    @given(CALLS, st.integers(1, 4))
    @settings(max_examples=60, deadline=None)
    def test_no_conflicts(self, calls: list[tuple[str, str, int]], limit: int) -> None:
        registry = ToolRegistry()
        path_schema = {"parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}
        for name in ("read_file", "write_file"):
            registry.register(name, "file", path_schema, echo_handler, parallel_safe=True, path_scoped="path")
        registry.register("terminal", "terminal", path_schema, echo_handler)
        registry.register("web_search", "web", path_schema, echo_handler, parallel_safe=True)

        async def main() -> int:
            gate = ToolConcurrencyGate(registry, limit=limit)
            running: list[_Claim] = []
            done = 0

            async def one(name: str, path: str, duration: int) -> None:
                nonlocal done
                claim = _claim(registry, name, {"path": path}, "/w")
                async with gate.slot(name, {"path": path}, "/w"):
                    assert not any(claim.conflicts(other) for other in running)
                    running.append(claim)
                    assert len(running) <= limit
                    await trio.sleep(duration)
                    running.remove(claim)
                done += 1

            async with trio.open_nursery() as nursery:
                for name, path, duration in calls:
                    nursery.start_soon(one, name, path, duration)
            return done

        assert len(calls) == trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
