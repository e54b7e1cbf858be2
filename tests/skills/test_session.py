"""Skills in a real session: the index in the system prompt the provider receives, frozen for the session;
a loaded skill's variables in that session's execute_code child, and not in another session's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.session.harness import open_harness, run_turn
from tests.skills.test_format_and_sources import skill_text, write_skill

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
