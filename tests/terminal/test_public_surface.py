"""The public surface of the terminal, background, jail and web packages."""

from __future__ import annotations

import subprocess
import sys

import pytest

import tools.background
import tools.jail
import tools.terminal
import tools.web


class TestPublicSurface:
    """Each package exports exactly the names it documents, and none of them imports actors."""

    @pytest.mark.parametrize("package", [tools.terminal, tools.background, tools.jail, tools.web])
    def test_all_names_resolve(self, package: object) -> None:
        names = package.__all__  # type: ignore[attr-defined]  # every package parametrized has __all__; the test reads it
        assert sorted(names) == sorted(set(names))
        for name in names:
            assert getattr(package, name) is not None

    def test_names_other_parts_call(self) -> None:
        assert {"register_terminal_tools", "ForegroundRun", "build_shell_env"} <= set(tools.terminal.__all__)
        assert {
            "BackgroundSpec",
            "ProcessInfo",
            "ProcessTable",
            "ProcessNotification",
            "run_background_process",
            "start_background_process",
        } <= set(tools.background.__all__)
        assert {"register_web_tools", "open_web_client"} <= set(tools.web.__all__)
        assert {
            "JailStatus", "JailUnavailable", "JailedProcess", "Launcher", "SessionJail", "open_launcher",
        } <= set(tools.jail.__all__)  # fmt: skip

    def test_no_actor_imports(self) -> None:
        code = (
            "import sys, tools.terminal, tools.background, tools.jail, tools.web, tools.process_tool, tools.approval; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('actors', 'supervisor')))"
        )
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
        assert out.stdout.strip() == "[]"
