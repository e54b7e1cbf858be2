"""Fixtures of the write_file / patch tests: the core tools in a real registry, a context in the test's directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools.builtin import register_core_tools
from tools.registry import ToolRegistry
from tools.testing import LocalToolContext


@pytest.fixture
def registry() -> ToolRegistry:
    """A registry holding the core tools, as a session has."""
    registry = ToolRegistry()
    register_core_tools(registry)
    return registry


@pytest.fixture
def ctx(tmp_path: Path) -> LocalToolContext:
    """A tool context working in the test's directory (its home hidden by the default full-access policy)."""
    return LocalToolContext(home=tmp_path / "home", cwd=tmp_path)
