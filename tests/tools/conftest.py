"""Fixtures of the tool tests: the run's launcher (real bwrap), for tools that start processes, and jails of
each mode in turn (``jails``); the core tools in a real registry and a context in the test's directory (a test
module may define its own); a real private key (``pem``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.jail.fixtures import jails, launcher
from tests.tools.real_key import pem
from tools.builtin import register_core_tools
from tools.registry import ToolRegistry
from tools.testing import LocalToolContext

__all__ = ["ctx", "jails", "launcher", "pem", "registry"]


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
