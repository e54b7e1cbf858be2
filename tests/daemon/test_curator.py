"""The skills curator as a user meets it: ``hermes-actors skills curate`` against a real daemon whose
model is the scripted provider, then ``skills list`` / ``skills log`` and the files of the skills."""

from __future__ import annotations

import json
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from tests.daemon.helpers import DaemonProcess, ScriptedProviderProcess, run_cli
from tools.skills import BUNDLED_DIR

BUNDLED = "debug-failing-test"


def _skill(name: str, description: str, body: str = "1. Do it.") -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\n# {name}\n\n{body}\n"


def _config(provider: ScriptedProviderProcess, extra: str = "") -> str:
    return (f"model:\n  default: scripted-model\n  provider: custom\n  base_url: {provider.base_url}\n"
            f"auxiliary:\n  curator:\n    model: curator-model\n{extra}")


def _agent_skills(home: Path, ages_in_days: dict[str, int]) -> None:
    """Skills the agent created ``ages_in_days`` ago and never used since (injected dates)."""
    now = datetime.now(timezone.utc)
    records = {}
    for name, age in ages_in_days.items():
        (home / "skills" / name).mkdir(parents=True)
        (home / "skills" / name / "SKILL.md").write_text(_skill(name, f"How to {name.replace('-', ' ')}."))
        created = (now - timedelta(days=age)).isoformat(timespec="seconds")
        records[name] = {"created_at": created, "last_used_at": None, "use_count": 0, "state": "active"}
    (home / "skills" / ".usage.json").write_text(json.dumps(records))


def _hand_written(home: Path, name: str) -> None:
    """A skill the user wrote themselves (``skills create``): no agent record."""
    source = home / f"{name}.md"
    source.write_text(_skill(name, "The user's own."))
    assert run_cli(home, "skills", "create", name, "--from-file", str(source)).returncode == 0


def _files(home: Path) -> dict[str, str]:
    """Every file of the skills under ``skills/`` (the backups, the lock and the schedule aside), with its text."""
    root = home / "skills"
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*"))
            if p.is_file() and ".curator_backups" not in p.parts and p.name not in (".usage.lock", ".curator_state")}


def _curate(home: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    return run_cli(home, "skills", "curate", *flags, timeout=60)


@pytest.fixture
def started(home: Path, provider: ScriptedProviderProcess) -> Any:
    """A daemon on the scripted provider, the home set up by the test first (call it with the extra config)."""
    daemons: list[DaemonProcess] = []

    def start(extra: str = "") -> DaemonProcess:
        home.mkdir(parents=True, exist_ok=True)
        (home / "config.yaml").write_text(_config(provider, extra))
        provider.reset()
        daemons.append(DaemonProcess(home).start())
        return daemons[-1]

    yield start
    for daemon in daemons:
        daemon.stop()


class TestStaleSkillsArchived:
    """A pass archives the agent's long-unused skills, marks the stale, and leaves every other skill alone."""

    def test_dry_run_then_archive(self, home: Path, started: Any) -> None:
        """--dry-run says what it would do and changes nothing; then 100 days unused: archived (recoverable,
        logged with why); 40: stale; new, hand-written, bundled: kept."""
        home.mkdir(parents=True)
        _agent_skills(home, {"old-deploy": 100, "aging-deploy": 40, "new-deploy": 2})
        _hand_written(home, "my-notes")
        bundled_before = {p: p.read_bytes() for p in BUNDLED_DIR.rglob("*") if p.is_file()}
        daemon = started()
        before = _files(home)
        assert "curator" in run_cli(home, "tree").stdout  # a member of the daemon's tree, beside the sessions

        preview = _curate(home, "--dry-run")
        assert preview.returncode == 0, daemon.log()
        assert "would be: skill 'old-deploy' archived" in preview.stdout
        assert "would be: skill 'aging-deploy' marked stale" in preview.stdout
        assert _files(home) == before
        assert "The background review has changed no skill yet." in run_cli(home, "skills", "log").stdout
        assert not (home / "skills" / ".curator_backups").exists()

        result = _curate(home)
        assert result.returncode == 0, daemon.log()
        assert "skill 'old-deploy' archived (why: never used for 100 days (curator.archive_after_days: 90))" in result.stdout
        assert "skill 'aging-deploy' marked stale" in result.stdout

        assert (home / "skills" / ".archive" / "old-deploy" / "SKILL.md").is_file()
        listed = run_cli(home, "skills", "list").stdout
        assert "old-deploy" not in listed
        for kept in ("aging-deploy", "new-deploy", "my-notes", BUNDLED):
            assert kept in listed
        assert {p: p.read_bytes() for p in BUNDLED_DIR.rglob("*") if p.is_file()} == bundled_before
        log = run_cli(home, "skills", "log").stdout
        assert "curator  skill 'old-deploy' archived (why: never used for 100 days" in log
        assert len(list((home / "skills" / ".curator_backups").iterdir())) == 1


MERGED = _skill("deploy-web", "How to deploy the web app and the docs site.", "1. Build.\n2. Deploy the docs too.")


class TestDuplicatesMerged:
    """The consolidation pass: the curator's model merges duplicates under the skill tool's guards."""

    def test_merge_and_archive_duplicate(self, home: Path, started: Any, provider: ScriptedProviderProcess) -> None:
        """The broader skill is edited, the duplicate archived; touching a bundled or hand-written skill is refused."""
        home.mkdir(parents=True)
        _agent_skills(home, {"deploy-web": 3, "deploy-docs": 3})
        _hand_written(home, "my-notes")
        daemon = started()
        provider.push(
            {"tool_calls": [{"id": "v1", "name": "skill_view", "arguments": {"name": "deploy-docs"}}]},
            {"tool_calls": [{"id": "e1", "name": "skill_manage",
                             "arguments": {"action": "edit", "name": "deploy-web", "content": MERGED}}],
             "text": "deploy-docs repeats deploy-web for another target."},
            {"tool_calls": [
                {"id": "d1", "name": "skill_manage",
                 "arguments": {"action": "delete", "name": "deploy-docs", "absorbed_into": "deploy-web"}},
                {"id": "d2", "name": "skill_manage", "arguments": {"action": "delete", "name": BUNDLED}},
                {"id": "d3", "name": "skill_manage", "arguments": {"action": "delete", "name": "my-notes"}},
            ]},
            {"text": "Merged the deploy skills."},
        )

        result = _curate(home, "--consolidate")
        assert result.returncode == 0, daemon.log()
        assert (home / "skills" / "deploy-web" / "SKILL.md").read_text() == MERGED
        assert (home / "skills" / ".archive" / "deploy-docs" / "SKILL.md").is_file()
        assert (home / "skills" / "my-notes" / "SKILL.md").is_file()
        assert (BUNDLED_DIR / "development" / BUNDLED / "SKILL.md").is_file()
        log = run_cli(home, "skills", "log").stdout
        assert "skill 'deploy-web' edited (why: deploy-docs repeats deploy-web for another target.)" in log
        assert "skill 'deploy-docs' archived (why: deploy-docs repeats deploy-web for another target. " \
               "(absorbed into 'deploy-web'))" in log
        assert BUNDLED not in log and "my-notes" not in log
        curator_requests = [r["body"] for r in provider.requests() if r["body"].get("model") == "curator-model"]
        assert len(curator_requests) == 4
        refusals = [m["content"] for m in curator_requests[-1]["messages"] if m.get("role") == "tool"]
        assert sum("is not one of the agent-created skills" in text for text in refusals) == 2


class TestFailedPassUndone:
    """A pass whose model fails or hangs halfway leaves the skills exactly as they were, and the daemon fine."""

    daemon: DaemonProcess

    def _start_and_edit(self, home: Path, started: Any, provider: ScriptedProviderProcess, extra: str,
                        then: dict[str, Any]) -> dict[str, str]:
        home.mkdir(parents=True)
        _agent_skills(home, {"deploy-web": 3, "deploy-docs": 3, "old-deploy": 100})
        self.daemon = started(extra)
        provider.push(
            {"tool_calls": [{"id": "e1", "name": "skill_manage",
                             "arguments": {"action": "edit", "name": "deploy-web", "content": MERGED}}],
             "text": "Merging."},
            then,
        )
        return _files(home)

    def _assert_undone(self, home: Path, before: dict[str, str], result: Any) -> None:
        assert result.returncode == 1
        assert "the pass failed and what it changed was undone" in result.stderr, self.daemon.log()
        assert _files(home) == before  # the edit and the archive of old-deploy are both undone
        assert "The background review has changed no skill yet." in run_cli(home, "skills", "log").stdout
        again = _curate(home, "--dry-run")  # the daemon still serves the curator
        assert again.returncode == 0 and "would be: skill 'old-deploy' archived" in again.stdout

    def test_model_error_mid_pass(self, home: Path, started: Any, provider: ScriptedProviderProcess) -> None:
        """The model errs after its first edit: the edit and the rules' archive are undone from the backup."""
        before = self._start_and_edit(home, started, provider, "", {"error": {"status": 400}})
        self._assert_undone(home, before, _curate(home, "--consolidate"))

    def test_model_hangs_past_the_timeout(self, home: Path, started: Any, provider: ScriptedProviderProcess) -> None:
        """The model stops answering: after auxiliary.curator.timeout the pass is abandoned and undone."""
        extra = "    timeout: 2\n"
        before = self._start_and_edit(home, started, provider, extra, {"text": "late", "delay_first_byte": 30})
        self._assert_undone(home, before, _curate(home, "--consolidate"))
