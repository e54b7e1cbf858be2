"""Import boundaries: a package reaches another actor package only through its face."""

from __future__ import annotations

import ast
from pathlib import Path


ROOT = Path(__file__).resolve().parents[2]
#: The actor packages; each one's ``__init__`` is its face.
PACKAGES = ("actors.session", "actors.subagent", "actors.sandbox", "actors.platform")
#: Inner faces: reached from outside their package (the CLI starts the daemon through ``run_daemon``).
INNER_FACES = frozenset({"actors.platform.daemon"})
#: The runtime's modules, reached through ``actors`` itself (``supervisor`` builds on them and is its own face).
RUNTIME_MODULES = (
    "actors.base", "actors.errors", "actors.handle", "actors.job", "actors.mailbox", "actors.registry",
)
RUNTIME = frozenset({"actors", "supervisor", *RUNTIME_MODULES})


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
    return found


def _owner(module: str) -> str | None:
    return next((pkg for pkg in PACKAGES if module == pkg or module.startswith(pkg + ".")), None)


def _production_files() -> list[Path]:
    skip = {"tests", "bench", ".venv", "build"}
    return [p for p in ROOT.rglob("*.py") if not skip & set(p.relative_to(ROOT).parts)]


def _module_of(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _violations() -> list[str]:
    found = []
    for path in _production_files():
        here = _module_of(path)
        home = _owner(here)
        for line, module in _imports(path):
            owner = _owner(module)
            if owner is not None and owner != home and module != owner and module not in INNER_FACES:
                found.append(f"{path.relative_to(ROOT)}:{line} imports {module} (use {owner})")
            if module in RUNTIME_MODULES and here not in RUNTIME:
                found.append(f"{path.relative_to(ROOT)}:{line} imports {module} (use actors)")
    return sorted(found)


class TestImportBoundaries:
    """No actor package imports another's private modules, and the runtime is reached through its face."""

    def test_no_private_imports(self) -> None:
        """Every cross-package import names the other package itself (its ``__init__``)."""
        assert _violations() == []

    def test_the_check_catches_a_private_import(self, tmp_path: Path) -> None:
        """The checker sees a private import when one is written (so an empty list means something)."""
        probe = tmp_path / "probe.py"
        probe.write_text("from actors.session.turn import TurnActor\nfrom actors.session import SessionActor\n")
        modules = [module for _, module in _imports(probe)]
        assert [m for m in modules if _owner(m) not in (None, m)] == ["actors.session.turn"]
