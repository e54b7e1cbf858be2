"""``hermes-actors skills ...`` run as a user runs it: a real process, its output and exit status."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.skills.test_format_and_sources import skill_text


# The checkout under test, first on the child's path: otherwise it imports whichever copy is installed.
ROOT = Path(__file__).resolve().parents[2]


def run(home: Path, cwd: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {"HERMES_ACTORS_HOME": str(home), "PATH": "/usr/bin:/bin", "HOME": str(home), "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "cli", "skills", *args], input=stdin, capture_output=True, text=True,
        env=env, cwd=cwd, timeout=60,
    )


def test_create_list_view_delete(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    (project / "mine.md").write_text(skill_text("mine", "My procedure."))
    created = run(home, project, "create", "mine", "--from-file", "mine.md", "--category", "ops", "--json")
    assert created.returncode == 0 and json.loads(created.stdout)["path"] == str(home / "skills/ops/mine/SKILL.md")
    listed = json.loads(run(home, project, "list", "--source", "user", "--json").stdout)
    assert [(s["name"], s["category"], s["source"]) for s in listed["skills"]] == [("mine", "ops", "user")]
    found = json.loads(run(home, project, "list", "--query", "my PROC", "--json").stdout)
    assert [s["name"] for s in found["skills"]] == ["mine"]
    tagged = json.loads(run(home, project, "list", "--tag", "git", "--json").stdout)
    assert [s["name"] for s in tagged["skills"]] == ["git-commit-hygiene"]
    viewed = json.loads(run(home, project, "view", "mine", "--json").stdout)
    assert viewed["content"] == "Steps." and viewed["description"] == "My procedure."
    refused = run(home, project, "delete", "mine")  # no terminal to confirm on
    assert refused.returncode == 2 and "needs --yes" in refused.stderr and (home / "skills/ops/mine").exists()
    assert run(home, project, "delete", "mine", "--yes").returncode == 0 and not (home / "skills/ops/mine").exists()


def test_errors_are_clear(tmp_path: Path) -> None:
    home = tmp_path / "home"
    taken = run(home, tmp_path, "create", "write-a-skill", "--from-file", "-", "--json", stdin=skill_text("write-a-skill"))
    assert taken.returncode == 2 and json.loads(taken.stdout)["error"]["code"] == "invalid"
    assert "already exists (bundled)" in taken.stderr
    bundled = run(home, tmp_path, "delete", "debug-failing-test", "--yes")
    assert bundled.returncode == 2 and "only user skills can be changed" in bundled.stderr
    missing = run(home, tmp_path, "view", "nope")
    assert missing.returncode == 2 and "no skill named 'nope'" in missing.stderr
