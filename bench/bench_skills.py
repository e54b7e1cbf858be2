"""Benchmarks of skills; prints its figures.

- The skills index for 200 user skills (plus the bundled ones): discovering them (every SKILL.md read
  and its frontmatter checked) and rendering the system prompt's layer, as a session start does.
- skill_view of one skill among those 200, through the real tool path (``dispatch``).

Run: .venv/bin/python bench/bench_skills.py
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from pathlib import Path

import trio

from tools.dispatch import dispatch
from tools.registry import ToolRegistry
from tools.skills import SkillRoots, discover, register_skill_tools, skills_prompt_section
from tools.testing import LocalToolContext

SKILLS = 200
RUNS = 30


def _make_skills(root: Path) -> None:
    for number in range(SKILLS):
        category = f"group-{number % 10}"
        directory = root / category / f"skill-{number:03d}"
        (directory / "references").mkdir(parents=True)
        (directory / "SKILL.md").write_text(
            f"---\nname: skill-{number:03d}\ndescription: Procedure number {number}, for a task that comes back "
            f"now and then; load it when the task mentions thing {number}.\ntags: [bench, t{number % 7}]\n---\n"
            + "# Steps\n" + "".join(f"{step}. Run `make step-{step}` and check its output.\n" for step in range(1, 30)),
            encoding="utf-8",
        )
        (directory / "references" / "notes.md").write_text("Background.\n" * 50, encoding="utf-8")


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


async def _view_ms(home: Path) -> float:
    registry = ToolRegistry()
    register_skill_tools(registry)
    ctx = LocalToolContext(home=home, cwd=home.parent)
    samples = []
    for _ in range(RUNS):
        start = time.perf_counter()
        reply = await dispatch(registry, "skill_view", {"name": "skill-123"}, ctx)
        samples.append(time.perf_counter() - start)
        assert json.loads(reply.text)["name"] == "skill-123"
    return _median_ms(samples)


def main() -> None:
    """Print the figures."""
    with tempfile.TemporaryDirectory() as scratch:
        home = Path(scratch) / "home"
        _make_skills(home / "skills")
        roots = SkillRoots(user=home / "skills")
        samples, size = [], 0
        for _ in range(RUNS):
            start = time.perf_counter()
            section = skills_prompt_section(discover(roots))
            samples.append(time.perf_counter() - start)
            size = len(section)
        print(f"skills index, {SKILLS} user skills + bundled: {_median_ms(samples):.1f} ms median "
              f"({size:,} characters; target <= 20 ms)")
        print(f"skill_view of one of them, through dispatch: {trio.run(_view_ms, home):.1f} ms median")


if __name__ == "__main__":
    main()
