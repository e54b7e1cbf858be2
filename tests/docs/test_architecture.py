"""docs/ARCHITECTURE.md names only files and packages that exist."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "ARCHITECTURE.md"
#: A path in backticks: a .py file, a package (``name/``), or a doc, from the repository's root.
_PATH = re.compile(r"`([A-Za-z_][\w./-]*(?:\.py|\.md|/))`")
#: A dotted module name in backticks that starts with one of the project's packages.
_DOTTED = re.compile(r"`((?:actors|cli|config|control|conversation|markup|messages|providers|store|supervisor|tools)(?:\.\w+)+)`")


def _named_paths() -> list[str]:
    return sorted(set(_PATH.findall(DOC.read_text(encoding="utf-8"))))


def _exists_as_module(dotted: str) -> bool:
    """A module or package, or a name defined in one (``supervisor.open_actor_system``)."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        base = ROOT.joinpath(*parts[:cut])
        if base.with_suffix(".py").is_file() or (base / "__init__.py").is_file():
            return cut >= len(parts) - 1
    return False


class TestArchitecturePaths:
    """Every path and module the architecture page names is in the repository."""

    def test_paths_exist(self) -> None:
        """A moved or renamed file shows here with the name the page still uses."""
        paths = _named_paths()
        assert len(paths) > 20
        assert [p for p in paths if not (ROOT / p).exists()] == []

    def test_modules_exist(self) -> None:
        """Dotted names (``actors.platform.daemon.wiring``) resolve to a module, or a name in one."""
        names = sorted(set(_DOTTED.findall(DOC.read_text(encoding="utf-8"))))
        assert [n for n in names if not _exists_as_module(n)] == []

    def test_actors_readme_points_here(self) -> None:
        """The old map in actors/README.md is a pointer, so there is one map to keep true."""
        assert "docs/ARCHITECTURE.md" in (ROOT / "actors" / "README.md").read_text(encoding="utf-8")
