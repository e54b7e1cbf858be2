"""Every tool shared with Hermes Agent offers the model the parameters Hermes's schema offers.

The fixtures (``tests/fixtures/hermes_schemas/*.json``) are written from Hermes Agent's published
schemas; a difference that is not declared ``differs_by_design`` there fails this test.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx2
import pytest

from actors.platform.daemon.toolbox import build_toolbox
from config.loader import Config

FIXTURES = Path(__file__).parents[1] / "fixtures" / "hermes_schemas"
COMPARED_KEYS = ("type", "enum", "minimum", "maximum", "minItems", "maxItems", "default")
SHARED_TOOLS = frozenset({
    "read_file", "write_file", "patch", "search_files", "terminal", "process", "memory", "todo", "clarify",
    "session_search", "web_search", "web_extract", "execute_code", "delegate_task",
    "skills_list", "skill_view", "skill_manage",
})
"""Every tool this project has that Hermes Agent has too."""


def _fixtures() -> list[Path]:
    return sorted(FIXTURES.glob("*.json"))


def _our_parameters() -> dict[str, Mapping[str, Any]]:
    # Every registered tool, offered or not here (the web tools are hidden without a search backend).
    registry = build_toolbox(Config(), httpx2.AsyncClient(), environ={}).registry
    return {name: registry.get(name).schema["parameters"] for name in registry.names()}  # type: ignore[union-attr]


def drift(hermes: Mapping[str, Any], ours: Mapping[str, Any], path: str = "") -> Iterator[str]:
    """Each difference between two parameter schemas, as ``path: what``."""
    for key in COMPARED_KEYS:
        if hermes.get(key) != ours.get(key):
            yield f"{path or '(top)'}: {key} is {ours.get(key)!r}, Hermes has {hermes.get(key)!r}"
    if sorted(hermes.get("required", [])) != sorted(ours.get("required", [])):
        yield f"{path or '(top)'}: required is {sorted(ours.get('required', []))}, Hermes has {sorted(hermes.get('required', []))}"
    hermes_props, our_props = hermes.get("properties", {}), ours.get("properties", {})
    for name in sorted(set(hermes_props) | set(our_props)):
        where = f"{path}.{name}" if path else name
        if name not in our_props:
            yield f"{where}: missing here"
        elif name not in hermes_props:
            yield f"{where}: not in Hermes"
        else:
            yield from drift(hermes_props[name], our_props[name], where)
    if "items" in hermes or "items" in ours:
        yield from drift(hermes.get("items", {}), ours.get("items", {}), f"{path}.items" if path else "items")


@pytest.mark.parametrize("fixture", _fixtures(), ids=lambda p: p.stem)
def test_no_undeclared_drift_from_hermes(fixture: Path) -> None:
    spec = json.loads(fixture.read_text(encoding="utf-8"))
    ours = _our_parameters()
    assert spec["name"] in ours, f"{spec['name']} is not registered here"
    declared = spec.get("differs_by_design", {})
    found = [d for d in drift(spec["parameters"], ours[spec["name"]]) if d.split(":")[0] not in declared]
    assert not found, "\n".join(found)


def test_every_shared_tool_has_a_fixture() -> None:
    assert {path.stem for path in _fixtures()} == SHARED_TOOLS
    assert SHARED_TOOLS <= set(_our_parameters()), "and every shared tool is registered"


def test_the_drift_check_can_fail() -> None:
    hermes = {"type": "object", "properties": {"n": {"type": "integer", "maximum": 5}}, "required": ["n"]}
    ours = {"type": "object", "properties": {"n": {"type": "integer", "maximum": 9}, "extra": {"type": "string"}}}
    assert list(drift(hermes, ours)) == [
        "(top): required is [], Hermes has ['n']",
        "extra: not in Hermes",
        "n: maximum is 9, Hermes has 5",
    ]
