"""The tool package's public surface."""

from __future__ import annotations

import subprocess
import sys

import tools


class TestPublicSurface:
    """The package exports exactly its documented names, and importing it pulls in no actors."""

    def test_all_names_resolve(self) -> None:
        assert sorted(tools.__all__) == sorted(set(tools.__all__))
        for name in tools.__all__:
            assert getattr(tools, name) is not None

    def test_expected_names(self) -> None:
        expected = {"ToolRegistry", "ToolContext", "dispatch", "ToolConcurrencyGate", "can_run_in_parallel", "redact_secrets", "find_threats", "ToolsetCatalog"}
        assert expected <= set(tools.__all__)

    def test_no_actor_imports(self) -> None:
        code = "import sys, tools, tools.builtin, tools.testing; print(sorted(m for m in sys.modules if m.split('.')[0] in ('actors', 'supervisor')))"
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
        assert "[]" == out.stdout.strip()
