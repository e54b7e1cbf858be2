"""Fixtures of the sandbox tests."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator

import pytest

from tests.jail.fixtures import Jails, jails, launcher
from tests.sandbox.helpers import ToolBench
from tools.testing import LocalToolContext

__all__ = ["bench", "jails", "launcher", "short_dir"]


@pytest.fixture
def short_dir() -> Iterator[str]:
    """A private directory with a short path (Unix socket paths are limited); must be empty at the end."""
    path = tempfile.mkdtemp(prefix="hx-t-", dir="/tmp")
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def bench(tmp_path, jails: Jails) -> ToolBench:
    """Real registry and context, jailed and in full-access in turn; slow tools take 0.2 s."""
    home = tmp_path / "home"
    return ToolBench(LocalToolContext(home=home, cwd=tmp_path, jail=jails.jail(tmp_path, home=home)))
