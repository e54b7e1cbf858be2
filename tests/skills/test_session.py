"""Skills in a real session: the index in the system prompt the provider receives, frozen for the session;
a loaded skill's variables in that session's execute_code child, and not in another session's."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest
import trio
import trio.testing

from config.loader import Config
from config.sandbox import SandboxConfig
from messages.session import Subscribe
from tests.session.harness import open_harness, run_turn
from tests.skills.test_format_and_sources import skill_text, write_skill
from tools.jail import Launcher
from tools.jail.runtime import DaemonJails, RuntimeDir

SCRIPT = "import os\nprint('token', len(os.environ.get('HX_SKILL_TOKEN', '')))"


def _system(body: dict) -> str:
    return body["messages"][0]["content"]


async def test_the_index_is_in_the_prompt_and_frozen(tmp_path: Path) -> None:
    async with open_harness(tmp_path) as h:
        write_skill(h.home / "skills", "release-notes", skill_text("release-notes", "Write the release notes."), category="docs")
        write_skill(h.workdir / ".hermes/skills", "team-style", skill_text("team-style", "The team's code style."))
        handle, events_in, _ = await h.start_session()
        h.provider.push({"text": "ok"}, {"text": "ok"})
        await run_turn(handle, events_in, "hi")
        system = _system(h.provider.requests[0].body)
        assert "<available_skills>" in system
        assert "  docs:\n    - release-notes: Write the release notes." in system
        assert "    - team-style: The team's code style." in system and "    - write-a-skill: " in system
        # A skill written now shows in new sessions; this session's prompt (and the provider's cache) stay.
        write_skill(h.home / "skills", "later", skill_text("later", "Came later."))
        await run_turn(handle, events_in, "again")
        assert _system(h.provider.requests[1].body) == system
        second, events_second, _ = await h.start_session()
        h.provider.push({"text": "ok"})
        await run_turn(second, events_second, "hi")
        assert "    - later: Came later." in _system(h.provider.requests[2].body)


async def test_no_index_without_the_skill_tools(tmp_path: Path) -> None:
    async with open_harness(tmp_path) as h:
        handle, events_in, _ = await h.start_session(toolsets=("file",))
        h.provider.push({"text": "ok"})
        await run_turn(handle, events_in, "hi")
        assert "<available_skills>" not in _system(h.provider.requests[0].body)


async def test_passthrough_reaches_execute_code_of_that_session_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HX_SKILL_TOKEN", "s3cr3t-value")
    async with open_harness(tmp_path) as h:
        text = "---\nname: uses-token\ndescription: d\nrequired_environment_variables: [HX_SKILL_TOKEN]\n---\nUse it.\n"
        write_skill(h.home / "skills", "uses-token", text)
        first, first_events, _ = await h.start_session()
        h.provider.push(
            {"tool_calls": [{"id": "v1", "name": "skill_view", "arguments": {"name": "uses-token"}}]},
            {"tool_calls": [{"id": "c1", "name": "execute_code", "arguments": {"code": SCRIPT}}]},
            {"text": "done"},
        )
        await run_turn(first, first_events, "use the skill")
        assert "token 12" in json.dumps(h.provider.requests[2].body)
        second, second_events, _ = await h.start_session()
        h.provider.push({"tool_calls": [{"id": "c2", "name": "execute_code", "arguments": {"code": SCRIPT}}]}, {"text": "done"})
        await run_turn(second, second_events, "no skill here")
        assert "token 0" in json.dumps(h.provider.requests[4].body)


async def test_passthrough_values_are_not_stored_and_survive_a_restore(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HX_SKILL_TOKEN", "s3cr3t-value")
    show = {"command": 'echo "len ${#HX_SKILL_TOKEN}"'}
    async with open_harness(tmp_path) as h:
        text = "---\nname: uses-token\ndescription: d\nrequired_environment_variables: [HX_SKILL_TOKEN]\n---\nUse it.\n"
        write_skill(h.home / "skills", "uses-token", text)
        handle, events_in, sid = await h.start_session()
        h.provider.push(
            {"tool_calls": [{"id": "v1", "name": "skill_view", "arguments": {"name": "uses-token"}}]},
            {"tool_calls": [{"id": "t1", "name": "terminal", "arguments": show}]},
            {"text": "done"},
        )
        await run_turn(handle, events_in, "use the skill")
        assert "len 12" in json.dumps(h.provider.requests[2].body)
        # TurnFinished goes out before the turn's closing save (the store here has no thread): let it finish.
        await trio.testing.wait_all_tasks_blocked()
        saved = (await h.deps.store.load(sid)).state
        assert saved["shell"]["passthrough"] == ["HX_SKILL_TOKEN"] and "s3cr3t-value" not in json.dumps(saved)
        events_in.close()
        await h.system.root.terminate_child(f"session:{sid}", "restore it")
        restored = await h.spawn_session(sid, None)
        events_again = await restored.ask(Subscribe("test"))
        h.provider.push({"tool_calls": [{"id": "t2", "name": "terminal", "arguments": show}]}, {"text": "done"})
        await run_turn(restored, events_again, "again")
        assert "len 12" in json.dumps(h.provider.requests[4].body)


class TestJailedSession:
    """A user skill's scripts are readable (not writable) inside a jailed session's processes."""

    @pytest.fixture
    def base(self) -> Iterator[Path]:
        # Outside /tmp: inside the jail, /tmp is the session's private one.
        path = tempfile.mkdtemp(prefix="hx-skills-", dir="/var/tmp")
        try:
            yield Path(path)
        finally:
            shutil.rmtree(path, ignore_errors=True)

    async def test_a_skill_written_during_the_session_runs_in_its_jail(self, base: Path, launcher: Launcher) -> None:
        if not launcher.status.available:
            pytest.skip(f"no jail can run here: {launcher.status.failed_step}")
        sandbox = SandboxConfig(mode="workspace-write")
        async with open_harness(base, Config(sandbox=sandbox)) as h:
            runtime = RuntimeDir.for_home(h.home, base / "runtime")
            runtime.prepare()
            h.deps = attrs.evolve(h.deps, jails=DaemonJails(config=sandbox, runtime=runtime, home=str(h.home), launcher=launcher))
            assert not (h.home / "skills").exists()  # the agent's first skill is written below
            handle, events_in, _ = await h.start_session()
            script = h.home / "skills/greet/scripts/hello.sh"
            h.provider.push(
                {"tool_calls": [{"id": "m1", "name": "skill_manage", "arguments": {
                    "action": "create", "name": "greet", "content": skill_text("greet", body="Run scripts/hello.sh.")}}]},
                {"tool_calls": [{"id": "m2", "name": "skill_manage", "arguments": {
                    "action": "write_file", "name": "greet", "file_path": "scripts/hello.sh",
                    "file_content": "echo hello from the skill\n"}}]},
                {"tool_calls": [{"id": "t1", "name": "terminal", "arguments": {"command": f"bash {script}; echo x >> {script}"}}]},
                {"text": "done"},
            )
            await run_turn(handle, events_in, "write a skill and run its script")
            ran = json.loads(h.provider.requests[3].body["messages"][-1]["content"])
            assert ran["output"].splitlines()[0] == "hello from the skill", ran
            assert "Read-only file system" in ran["output"] and script.read_text() == "echo hello from the skill\n"
