"""Fixtures of the sandbox tests."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator

import pytest

from tests.sandbox.helpers import ToolBench
from tools.testing import LocalToolContext


@pytest.fixture
def short_dir() -> Iterator[str]:
    """A private directory with a short path (Unix socket paths are limited); must be empty at the end."""
    path = tempfile.mkdtemp(prefix="hx-t-", dir="/tmp")
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def bench(tmp_path) -> ToolBench:
    """Real registry and context; slow tools take 0.2 s."""
    return ToolBench(LocalToolContext(home=tmp_path, cwd=tmp_path))
