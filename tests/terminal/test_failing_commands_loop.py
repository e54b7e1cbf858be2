"""A failing terminal command counts as a failed call in a real session's loop, as in Hermes Agent."""

from __future__ import annotations

from pathlib import Path

from config.loader import Config
from config.session import GuardrailHardStopAfter, GuardrailsConfig
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


class TestFailingCommandsBlock:
    """With hard stops on, the same failing command is blocked at its limit and the turn ends with the reason."""

    async def test_the_block_ends_the_turn(self, tmp_path: Path) -> None:
        """The third identical failing `false` is not run; the turn ends with Hermes's block text, not a model answer."""
        guardrails = GuardrailsConfig(hard_stop_enabled=True, hard_stop_after=GuardrailHardStopAfter(exact_failure=2))
        async with open_harness(tmp_path, Config(tool_loop_guardrails=guardrails)) as h:
            handle, events_in, session_id = await h.start_session()
            call = {"name": "terminal", "arguments": {"command": "false"}}
            h.provider.push(*({"tool_calls": [{"id": f"c{i}", **call}]} for i in range(3)), {"text": "never asked"})
            finished, _ = await run_turn(handle, events_in, "keep trying")
            assert "Blocked terminal: the same call failed 2 times" in finished.final_text
            assert len(h.provider.requests) == 3, "no model call after the block"
            results = [m["content"] for m in (await h.deps.store.load(session_id)).messages if m["role"] == "tool"]
            assert len(results) == 3 and "repeated_exact_failure_block" in results[2]


class TestAttendedSources:
    """A chat platform's session is attended (loops are warned about); only a cron session is stopped by default."""

    async def _run(self, tmp_path: Path, source: str) -> tuple[str, list[str]]:
        """Three identical failing `false` calls in a session from ``source``; returns (final text, tool results)."""
        guardrails = GuardrailsConfig(hard_stop_after=GuardrailHardStopAfter(exact_failure=2))
        async with open_harness(tmp_path, Config(tool_loop_guardrails=guardrails)) as h:
            handle, events_in, session_id = await h.start_session(source=source)
            call = {"name": "terminal", "arguments": {"command": "false"}}
            h.provider.push(*({"tool_calls": [{"id": f"c{i}", **call}]} for i in range(3)), {"text": "gave up"})
            finished, _ = await run_turn(handle, events_in, "keep trying")
            results = [m["content"] for m in (await h.deps.store.load(session_id)).messages if m["role"] == "tool"]
            return finished.final_text, results

    async def test_a_discord_session_is_warned_not_stopped(self, tmp_path: Path) -> None:
        """All three calls run and the model answers, as in a CLI session."""
        final_text, results = await self._run(tmp_path, "discord")
        assert final_text == "gave up"
        assert len(results) == 3 and not any("repeated_exact_failure_block" in r for r in results)
        assert "repeated_exact_failure_warning" in results[2]

    async def test_a_cron_session_is_stopped(self, tmp_path: Path) -> None:
        """The third identical call is blocked and the turn ends with the reason."""
        final_text, results = await self._run(tmp_path, "cron")
        assert "Blocked terminal: the same call failed 2 times" in final_text
        assert "repeated_exact_failure_block" in results[2]
