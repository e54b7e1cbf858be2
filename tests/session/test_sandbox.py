"""execute_code inside a session: the script's tool calls run through the session."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import actors.sandbox.server as server_module
from conversation.history import check_alternation
from messages.chat import messages_from_dicts
from messages.events import ToolProgress
from tests.session.harness import open_harness, run_turn

SCRIPT = """
from hermes_tools import terminal, read_file
r = terminal("cd /tmp")
print(terminal("pwd")["output"].strip())
print(read_file(NOTES)["content"])
"""


class TestExecuteCode:
    """A script calling tools over the sandbox socket, inside a turn."""

    async def test_script_tool_calls_share_session_state(self, tmp_path: Path) -> None:
        """cd in one call persists to the next; output returns to the model; calls go to the transcript."""
        async with open_harness(tmp_path) as h:
            (h.workdir / "notes.txt").write_text("first line of notes\n")
            handle, events_in, sid = await h.start_session()
            code = SCRIPT.replace("NOTES", repr(str(h.workdir / "notes.txt")))
            h.provider.push(
                {"tool_calls": [{"id": "x1", "name": "execute_code", "arguments": {"code": code}}]},
                {"text": "script done"},
            )
            finished, events = await run_turn(handle, events_in, "run the script")
            assert finished.final_text == "script done"
            messages = (await h.deps.store.load(sid)).messages
            check_alternation(messages_from_dicts(messages))
            result = json.loads(next(m for m in messages if m["role"] == "tool")["content"])
            assert result["status"] == "success", result
            assert "/tmp" in result["output"] and "first line of notes" in result["output"]
            assert result["tool_calls_made"] == 3
            transcript = await h.deps.store.load_transcript(sid)
            assert [r.record["tool"] for r in transcript] == ["terminal", "terminal", "read_file"]
            # One write for the script's calls, however many (they were one commit each).
            assert len({r.created_at for r in transcript}) == 1
            assert any(isinstance(e, ToolProgress) for e in events)

    async def test_refusals_past_the_record_limit_are_summed_up(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The transcript keeps the first refused calls and one record counting the rest."""
        monkeypatch.setattr(server_module, "MAX_RECORDED_REFUSALS", 3)
        async with open_harness(tmp_path) as h:
            handle, events_in, sid = await h.start_session()
            code = "import hermes_tools\nfor _ in range(5):\n    hermes_tools._call('memory', {})\n"
            h.provider.push(
                {"tool_calls": [{"id": "x1", "name": "execute_code", "arguments": {"code": code}}]},
                {"text": "done"},
            )
            await run_turn(handle, events_in, "run it")
            transcript = [r.record for r in await h.deps.store.load_transcript(sid)]
            assert [(r["kind"], r.get("tool")) for r in transcript[:3]] == [("sandbox_tool_call", "memory")] * 3
            assert transcript[3:] == [{"kind": "sandbox_tool_calls_unrecorded", "refused": 2}]


class TestPatchFromAScript:
    """Hermes's four-argument hermes_tools.patch still edits, now that the patch tool requires mode."""

    async def test_the_stub_passes_the_default_mode(self, tmp_path: Path) -> None:
        async with open_harness(tmp_path) as h:
            target = h.workdir / "conf.txt"
            target.write_text("level = 1\n")
            handle, events_in, sid = await h.start_session()
            code = f"from hermes_tools import patch\nprint(patch({str(target)!r}, 'level = 1', 'level = 2', False)['success'])"
            h.provider.push(
                {"tool_calls": [{"id": "x1", "name": "execute_code", "arguments": {"code": code}}]},
                {"text": "patched"},
            )
            await run_turn(handle, events_in, "patch it")
            result = json.loads(next(m for m in (await h.deps.store.load(sid)).messages if m["role"] == "tool")["content"])
            assert result["output"] == "True\n", result
            assert target.read_text() == "level = 2\n"
