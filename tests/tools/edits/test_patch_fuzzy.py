"""patch's old_string is found through Hermes's chain of strategies, through the real registry and dispatch."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.tools.edits.helpers import call
from tools.files._fuzzy import fuzzy_replace
from tools.files._markers import MarkerOverSecret
from tools.files._strategies import STRATEGIES
from tools.redact import REDACTED
from tools.registry import ToolRegistry
from tools.testing import LocalToolContext

KEY = "sk-proj-0123456789abcdefghijKLMNOP"


async def patch(registry: ToolRegistry, ctx: LocalToolContext, **args: Any) -> dict[str, Any]:
    return await call(registry, ctx, "patch", **{"mode": "replace", **args})


class TestChainOrder:
    """The strategies are Hermes's, in Hermes's order."""

    def test_names_in_order(self) -> None:
        assert [name for name, _ in STRATEGIES] == [
            "exact", "line_trimmed", "whitespace_normalized", "indentation_flexible", "escape_normalized",
            "trimmed_boundary", "unicode_normalized", "block_anchor", "context_aware",
        ]  # fmt: skip


# (file content, old_string, new_string, expected file, expected strategy)
CASES = [
    ("def f():\n    return 1\n", "return 1", "return 2", "def f():\n    return 2\n", "exact"),
    ("if a:\n    b()   \n    c()\n", "if a:\n    b()\n    c()", "if a:\n    b()\n    d()", "if a:\n    b()\n    d()\n", "line_trimmed"),
    (
        "class A:\n    def f(self):\n        x = 1\n        return x\n",
        "def f(self):\nx = 1\nreturn x",
        "def f(self):\nx = 2\nreturn x",
        "class A:\n    def f(self):\n        x = 2\n        return x\n",
        "line_trimmed",
    ),
    ("a = 1\r\nb = 2\r\nc = 3\r\n", "a = 1\nb = 2", "a = 1\nb = 5", "a = 1\r\nb = 5\r\nc = 3\r\n", "line_trimmed"),
    ("x  =   compute(a,\tb)\n", "x = compute(a, b)", "x = compute(a, c)", "x = compute(a, c)\n", "whitespace_normalized"),
    ("    if a:  \n        b()\n", "if a:\n  b()", "if a:\n  c()", "    if a:\n        c()\n", "line_trimmed"),
    ("a\n\tb\nc\n", "a\\n\\tb", "a\\n\\tB", "a\n\tB\nc\n", "escape_normalized"),
    ("say \u201chi\u201d \u2014 ok\n", 'say "hi" -- ok', 'say "bye" -- ok', "say \u201cbye\u201d \u2014 ok\n", "unicode_normalized"),
    (
        "def f():\n    x = 1\n    y = 2\n    return x\n",
        "def f():\n    x = 1\n    yy = 2\n    return x",
        "def f():\n    return 0",
        "def f():\n    return 0\n",
        "block_anchor",
    ),
    ("a = 1\nresult = compute(alpha, beta)\n", "result = compute(alpha, betta)", "result = 2", "a = 1\nresult = 2\n", "context_aware"),
]


class TestStrategies:
    """Each strategy finds what the stricter ones miss, edits the file, and the result names it."""

    @pytest.mark.parametrize(("content", "old", "new", "expected", "strategy"), CASES, ids=[c[4] + str(i) for i, c in enumerate(CASES)])
    async def test_match_and_edit(
        self, registry: ToolRegistry, ctx: LocalToolContext, tmp_path: Path,
        content: str, old: str, new: str, expected: str, strategy: str,
    ) -> None:  # fmt: skip
        (tmp_path / "f.py").write_text(content)
        result = await patch(registry, ctx, mode="replace", path="f.py", old_string=old, new_string=new)
        assert (True, strategy) == (result.get("success"), result.get("strategy")), result
        assert expected == (tmp_path / "f.py").read_bytes().decode()

    @pytest.mark.parametrize(
        ("name", "content", "old", "span"),
        [
            ("indentation_flexible", "x\n    a = 1\n    b = 2\n", "a = 1\nb = 2", (2, 21)),
            ("trimmed_boundary", "x\n  first\n middle \n  last  \ny\n", "first\n middle \nlast", (2, 27)),
        ],
    )
    def test_strategies_line_trimmed_shadows(self, name: str, content: str, old: str, span: tuple[int, int]) -> None:
        """These two find whole lines as Hermes's do; in Hermes's order line_trimmed (looser on both ends) answers first."""
        strategies = dict(STRATEGIES)
        assert [span] == strategies[name](content, old) == strategies["line_trimmed"](content, old)
        assert [] == strategies[name](content, old.replace("a = 1", "a = 9").replace("middle", "centre"))


class TestUniqueness:
    """Several matches need replace_all; a loose strategy never replaces several places."""

    async def test_ambiguous_fuzzy_match_lists_lines(self, registry: ToolRegistry, ctx: LocalToolContext, tmp_path: Path) -> None:
        (tmp_path / "f.py").write_text("x  = 1\ny = 2\nx =  1\n")
        result = await patch(registry, ctx, path="f.py", old_string="x = 1", new_string="x = 3")
        assert "matches 2 places" in result["error"] and "whitespace_normalized" in result["error"]
        assert "line 1: x  = 1\n  line 3: x =  1" in result["error"]
        assert "x  = 1\ny = 2\nx =  1\n" == (tmp_path / "f.py").read_text()

    async def test_replace_all_through_fuzzy_strategy(self, registry: ToolRegistry, ctx: LocalToolContext, tmp_path: Path) -> None:
        (tmp_path / "f.py").write_text("x  = 1\ny = 2\nx =  1\n")
        result = await patch(registry, ctx, path="f.py", old_string="x = 1", new_string="x = 3", replace_all=True)
        assert (2, "whitespace_normalized") == (result["replacements"], result["strategy"])
        assert "x = 3\ny = 2\nx = 3\n" == (tmp_path / "f.py").read_text()

    async def test_replace_all_refused_for_loose_matches(self, registry: ToolRegistry, ctx: LocalToolContext, tmp_path: Path) -> None:
        (tmp_path / "f.py").write_text("total = compute(alpha)\nz\ntotal = compute(alphb)\n")
        result = await patch(
            registry, ctx, path="f.py", old_string="total = compute(alpha1)", new_string="t = 0", replace_all=True
        )
        assert "only resembles 2 places" in result["error"] and "context_aware" in result["error"]
        assert "total = compute(alpha)\nz\ntotal = compute(alphb)\n" == (tmp_path / "f.py").read_text()


class TestGuards:
    """Transport artefacts are refused on a fuzzy match; a re-sent edit is answered as done; blank old_string refused."""

    async def test_escaped_quote_drift_refused(self, registry: ToolRegistry, ctx: LocalToolContext, tmp_path: Path) -> None:
        (tmp_path / "f.py").write_text("print('it is')  \n")
        result = await patch(registry, ctx, path="f.py", old_string="print(\\'it is\\')", new_string="print(\\'it was\\')")
        assert "backslash was probably added in transit" in result["error"]

    async def test_already_applied_is_a_no_op(self, registry: ToolRegistry, ctx: LocalToolContext, tmp_path: Path) -> None:
        (tmp_path / "f.py").write_text("value = compute_total(items)\n")
        result = await patch(registry, ctx, path="f.py", old_string="value = 1", new_string="value = compute_total(items)")
        assert {"success": True, "no_change": True} == {k: result[k] for k in ("success", "no_change")}
        assert "already holds new_string" in result["note"]

    async def test_whitespace_only_old_string(self, registry: ToolRegistry, ctx: LocalToolContext, tmp_path: Path) -> None:
        (tmp_path / "f.py").write_text("a\n\nb\n")
        result = await patch(registry, ctx, path="f.py", old_string="\n\n", new_string="\n")
        assert "only whitespace" in result["error"]

    async def test_mode_replace_names_missing_arguments(self, registry: ToolRegistry, ctx: LocalToolContext) -> None:
        result = await patch(registry, ctx, mode="replace", path="f.py")
        assert "mode='replace' needs path, old_string, new_string; missing: old_string, new_string." in result["error"]

    async def test_unknown_mode_refused(self, registry: ToolRegistry, ctx: LocalToolContext) -> None:
        result = await patch(registry, ctx, mode="diff", path="f.py")
        assert "'mode' must be one of \"replace\", \"patch\"" in result["error"]


# Per strategy: a file with a secret, and an old_string that shows the secret as the marker.
_CLIENT = (
    'client = OpenAIClient(api_key="{}", organization="acme-research", timeout=30, max_retries=5, '
    'base_url="https://api.openai.com/v1", default_headers=None)'
)
MARKER_CASES = [
    ("exact", f"KEY={KEY}\n", f"KEY={REDACTED}"),
    ("line_trimmed", f"a = 1\nKEY={KEY}\nb = 2\n", f"a = 1\n  KEY={REDACTED}\nb = 2"),
    ("whitespace_normalized", f"x  = 1; KEY={KEY}\n", f"x = 1; KEY={REDACTED}"),
    ("indentation_flexible", f"    a = 1\n    KEY={KEY}\n", f"a = 1\nKEY={REDACTED}"),
    ("escape_normalized", f"a\n\tKEY={KEY}\n", f"a\\n\\tKEY={REDACTED}"),
    ("trimmed_boundary", f"  first\nKEY={KEY}\n  last\n", f"first\nKEY={REDACTED}\nlast"),
    ("unicode_normalized", f"say \u201chi\u201d KEY={KEY}\n", f'say "hi" KEY={REDACTED}'),
    ("block_anchor", f"def f():\n    client = make(api_key='{KEY}')\n    return client\n",
     f"def f():\n    client = make(api_key='{REDACTED}')\n    return client"),
    ("context_aware", _CLIENT.format(KEY) + "\n", _CLIENT.format(REDACTED)),
]  # fmt: skip
LOOSE = {"block_anchor", "context_aware"}


class TestMarkerNeverMatchesSecret:
    """No strategy matches the redaction marker in old_string against the secret it hides; the file is untouched."""

    @pytest.mark.parametrize(("strategy", "content", "old"), MARKER_CASES, ids=[c[0] for c in MARKER_CASES])
    async def test_refused_through_the_chain(
        self, registry: ToolRegistry, ctx: LocalToolContext, tmp_path: Path, strategy: str, content: str, old: str
    ) -> None:
        (tmp_path / "f.py").write_text(content)
        result = await patch(registry, ctx, path="f.py", old_string=old, new_string="removed = True")
        assert "error" in result, f"the marker was matched against the secret: {result}"
        assert REDACTED in result["error"] and "stands for a secret" in result["error"]
        assert content == (tmp_path / "f.py").read_text()
        assert KEY not in json.dumps(result)

    @pytest.mark.parametrize(("strategy", "content", "old"), MARKER_CASES, ids=[c[0] for c in MARKER_CASES])
    def test_refused_by_each_strategy_alone(self, strategy: str, content: str, old: str) -> None:
        """Each strategy alone refuses; the loose ones would pair marker and secret but for the rule."""
        only = [(name, fn) for name, fn in STRATEGIES if name == strategy]
        assert bool(only[0][1](content, old)) == (strategy in LOOSE)
        with pytest.raises(MarkerOverSecret):
            fuzzy_replace(content, old, "removed = True", False, "f.py", strategies=only)

    async def test_the_marker_text_itself_still_matches(self, registry: ToolRegistry, ctx: LocalToolContext, tmp_path: Path) -> None:
        """A file that holds the marker text literally (documentation) can be patched around it fuzzily."""
        (tmp_path / "doc.md").write_text(f"Secrets  show as {REDACTED}.\n")
        result = await patch(registry, ctx, path="doc.md", old_string=f"Secrets show as {REDACTED}.", new_string="Hidden.")
        assert "whitespace_normalized" == result["strategy"]
        assert "Hidden.\n" == (tmp_path / "doc.md").read_text()
