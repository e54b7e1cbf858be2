"""The type checker, run as part of the suite so CI runs it (its configuration: ``[tool.mypy]`` in
pyproject.toml)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


class TestTypes:
    """mypy finds no error in the project's packages."""

    def test_mypy_passes(self) -> None:
        """The whole project type-checks under pyproject.toml's settings (strict where it says so)."""
        # No --cache-dir override: a developer's second run reuses .mypy_cache; CI's fresh clone runs cold.
        result = subprocess.run(
            [sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True, stdin=subprocess.DEVNULL,
        )
        assert result.returncode == 0, f"mypy found errors:\n{result.stdout}{result.stderr}"
