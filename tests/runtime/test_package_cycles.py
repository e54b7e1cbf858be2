"""No import cycle between the project's packages: the layers can be read bottom up."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: Not part of the installed project.
_SKIP = {"tests", "bench", "docs", "build", ".venv"}


def _tops() -> set[str]:
    """The top-level packages and modules of the project (``supervisor.py`` among them)."""
    packages = {p.parent.name for p in ROOT.glob("*/__init__.py")}
    modules = {p.stem for p in ROOT.glob("*.py")}
    return (packages | modules) - _SKIP


def unit_of(module: str, tops: set[str]) -> str | None:
    """The node a module belongs to: its top-level package, except that ``actors`` is two layers.

    ``actors/*.py`` is the runtime, which ``supervisor`` builds on; ``actors/<sub>/`` are the actors,
    built on both. So each subpackage of ``actors`` is a node of its own.
    """
    parts = module.split(".")
    if parts[0] not in tops:
        return None
    if parts[0] == "actors" and len(parts) > 1 and (ROOT / "actors" / parts[1]).is_dir():
        return f"actors.{parts[1]}"
    return parts[0]


def _module_of(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(source: str) -> Iterator[tuple[int, str]]:
    """Every absolute import in ``source`` (inside functions and ``TYPE_CHECKING`` blocks too)."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.lineno, node.module
        elif isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)


def import_graph() -> dict[str, dict[str, str]]:
    """node -> {node it imports: the first place it does}."""
    tops = _tops()
    graph: dict[str, dict[str, str]] = {}
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT)
        if _SKIP & set(rel.parts) or unit_of(_module_of(path), tops) is None:
            continue
        here = unit_of(_module_of(path), tops)
        assert here is not None
        for line, module in imports_of(path.read_text(encoding="utf-8")):
            there = unit_of(module, tops)
            if there is not None and there != here:
                graph.setdefault(here, {}).setdefault(there, f"{rel}:{line}")
    return graph


def find_cycles(graph: dict[str, dict[str, str]]) -> list[list[str]]:
    """Each strongly connected group of more than one node, as a closed path through it."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph.get(node, {}):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(groups)


def _describe(graph: dict[str, dict[str, str]], group: list[str]) -> str:
    edges = [f"{a} -> {b} ({graph[a][b]})" for a in group for b in group if b in graph.get(a, {})]
    return "; ".join(edges)


class TestPackageCycles:
    """The packages import each other in one direction only, ``supervisor`` and ``actors`` included."""

    def test_no_cycle(self) -> None:
        """Every cycle is reported with the first import of each of its edges."""
        graph = import_graph()
        assert [_describe(graph, g) for g in find_cycles(graph)] == []

    def test_runtime_is_below_supervisor(self) -> None:
        """``supervisor`` builds on the runtime in ``actors``; the runtime never imports it."""
        graph = import_graph()
        assert "actors" in graph.get("supervisor", {})
        assert "supervisor" not in graph.get("actors", {})

    def test_the_check_finds_a_cycle(self) -> None:
        """Two packages importing each other, even inside a function, are one cycle (so [] means something)."""
        source = "import trio\ndef f():\n    from store.sql import x\n"
        tops = {"store", "tools", "actors"}
        graph = {"tools": {unit_of(m, tops) or "": "probe" for _, m in imports_of(source) if unit_of(m, tops)},
                 "store": {"tools": "probe"}}
        assert find_cycles(graph) == [["store", "tools"]]
        assert unit_of("actors.session.turn", tops) == "actors.session"
        assert unit_of("actors.base", tops) == "actors"
