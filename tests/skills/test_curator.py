"""The skills curator in process: its schedule on Trio's clock, and the skill tools recording which skills
are the agent's (the only ones it curates)."""

from __future__ import annotations

import json
from collections.abc import Collection
from datetime import datetime, timedelta, timezone
from pathlib import Path

import trio
import trio.testing

from actors.platform.curator import CURATOR, CuratorActor
from config.curator import CuratorConfig
from config.loader import Config
from supervisor import ChildSpec
from tests.session.harness import open_harness, run_turn
from tools.skills import usage

EPOCH = datetime(2026, 1, 1, tzinfo=timezone.utc)
HOUR = 3600.0


def wall() -> datetime:
    """The wall clock, tied to Trio's (a MockClock starts at 0)."""
    return EPOCH + timedelta(seconds=trio.current_time())


def _agent_skill(home: Path, name: str, created: datetime) -> None:
    (home / "skills" / name).mkdir(parents=True)
    (home / "skills" / name / "SKILL.md").write_text(f"---\nname: {name}\ndescription: Do {name}.\n---\n1. Go.\n")
    usage.note_created(home, name, created)


async def _cron_needs_kept(*_: object) -> Collection[str]:
    return {"kept-by-cron"}


def _summary(home: Path) -> str:
    return str(json.loads((home / "skills" / ".curator_state").read_text())["last_run_summary"])


class TestSchedule:
    """A pass runs every curator.interval_hours; a home first seen waits one interval, as in Hermes."""

    async def test_first_pass_one_interval_after_first_seen(
        self, tmp_path: Path, autojump_clock: trio.testing.MockClock
    ) -> None:
        """Nothing changes before 168 h; then the long-unused skill is archived, a cron job's skill is not."""
        async with open_harness(tmp_path) as harness:
            home = harness.home
            _agent_skill(home, "old-deploy", wall() - timedelta(days=200))
            _agent_skill(home, "kept-by-cron", wall() - timedelta(days=200))
            await harness.system.root.start_child(
                ChildSpec(CURATOR, lambda: CuratorActor(lambda: harness.deps, wall, _cron_needs_kept))
            )
            await trio.sleep(167 * HOUR)
            assert (home / "skills" / "old-deploy").is_dir()
            with trio.fail_after(2 * HOUR):
                while _summary(home) != "curator: archive 1":  # the pass ends (its file work is in threads)
                    await trio.sleep(1)
            assert 168 * HOUR <= trio.current_time() < 169 * HOUR
            assert (home / "skills" / ".archive" / "old-deploy" / "SKILL.md").is_file()
            assert (home / "skills" / "kept-by-cron" / "SKILL.md").is_file()

    async def test_off_when_disabled(self, tmp_path: Path, autojump_clock: trio.testing.MockClock) -> None:
        """curator.enabled: false: no pass runs however long the daemon waits."""
        async with open_harness(tmp_path, Config(curator=CuratorConfig(enabled=False))) as harness:
            _agent_skill(harness.home, "old-deploy", wall() - timedelta(days=200))
            await harness.system.root.start_child(
                ChildSpec(CURATOR, lambda: CuratorActor(lambda: harness.deps, wall, _cron_needs_kept))
            )
            await trio.sleep(1000 * HOUR)
            assert (harness.home / "skills" / "old-deploy" / "SKILL.md").is_file()


class TestProvenance:
    """skill_manage records the skills the agent creates, and skill_view each use: what the curator judges by."""

    async def test_created_by_the_agent_then_used(self, tmp_path: Path) -> None:
        """A skill the model creates in a turn has a record; viewing it counts a use."""
        content = "---\nname: tidy-logs\ndescription: Rotate the logs.\n---\n1. Rotate.\n"
        steps = [
            {"tool_calls": [{"id": "c1", "name": "skill_manage",
                             "arguments": {"action": "create", "name": "tidy-logs", "content": content}}]},
            {"text": "Saved."},
            {"tool_calls": [{"id": "v1", "name": "skill_view", "arguments": {"name": "tidy-logs"}}]},
            {"text": "Loaded."},
        ]
        async with open_harness(tmp_path, steps=steps) as harness:
            handle, subscription, _ = await harness.start_session()
            await run_turn(handle, subscription, "keep this as a skill")
            created = usage.read_usage(harness.home)["tidy-logs"]
            assert created.use_count == 0 and created.last_used_at is None
            await run_turn(handle, subscription, "use the skill")
            assert usage.read_usage(harness.home)["tidy-logs"].use_count == 1
