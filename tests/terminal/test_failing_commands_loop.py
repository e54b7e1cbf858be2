"""A failing terminal command counts as a failed call in a real session's loop, as in Hermes Agent."""

from __future__ import annotations

from pathlib import Path

from tests.session.harness import open_harness, run_turn


class TestFailingCommandsWarn:
    """The same command exiting nonzero twice gets the guardrails' repeated-failure warning."""

    async def test_repeated_nonzero_exit_is_warned(self, tmp_path: Path) -> None:
        """The second identical `grep` without a match carries the warning; its text is still the shell's."""
        async with open_harness(tmp_path) as h:
            (h.workdir / "notes.txt").write_text("alpha\n")
            handle, events_in, session_id = await h.start_session()
            call = {"name": "terminal", "arguments": {"command": "grep omega notes.txt"}}
            h.provider.push(
                {"tool_calls": [{"id": "c1", **call}]},
                {"tool_calls": [{"id": "c2", **call}]},
                {"text": "nothing there"},
            )
            finished, _ = await run_turn(handle, events_in, "look for omega twice")
            assert finished.final_text == "nothing there"
            loaded = await h.deps.store.load(session_id)
            first, second = [m["content"] for m in loaded.messages if m["role"] == "tool"]
            assert '"exit_code_meaning": "No matches found (not an error)"' in first
            assert "Tool loop warning" not in first
            assert "repeated_exact_failure_warning" in second
