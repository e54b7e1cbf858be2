"""Iteration, time and token budgets; approvals and clarify through the session."""

from __future__ import annotations

import json
from pathlib import Path

import trio

from conversation.budget import FORCED_SUMMARY_TEXT, GRACE_NOTICE
from conversation.history import check_alternation
from config.loader import Config
from config.session import AgentConfig, ClarifyConfig
from config.terminal import ApprovalsConfig
from messages.chat import messages_from_dicts
from messages.events import ApprovalRequested, RequestResolved, SessionEvent, StatusUpdate
from messages.session import AnswerRequest, Subscribe, UserMessage
from tests.session.harness import collect_turn, open_harness, run_turn
from tests.session.test_interrupts import register_slow_tool, wait_for
from tools.clarify import TIMEOUT_ANSWER


def todo_call(i: int) -> dict:
    return {"tool_calls": [{"id": f"c{i}", "name": "todo", "arguments": {"todos": [{"id": str(i), "content": f"step {i}", "status": "pending"}]}}]}


class TestIterationBudget:
    """At zero: one grace call, then the forced summary without tools."""

    async def test_grace_then_forced_summary(self, tmp_path: Path) -> None:
        """A model that never stops calling tools still ends the turn with a coherent answer."""
        async with open_harness(tmp_path) as h:
            handle, events_in, sid = await h.start_session(max_iterations=2)
            h.provider.push(todo_call(1), todo_call(2), todo_call(3), {"text": "Summary: I planned three steps."})
            finished, _ = await run_turn(handle, events_in, "plan forever")
            assert (finished.reason, finished.final_text) == ("completed", "Summary: I planned three steps.")
            bodies = [json.dumps(r.body, ensure_ascii=False) for r in h.provider.requests]
            assert len(bodies) == 4
            assert GRACE_NOTICE in bodies[2] and FORCED_SUMMARY_TEXT in bodies[3]
            assert '"tools"' not in bodies[3] or '"tools": []' in bodies[3] or '"tools":[]' in bodies[3]
            messages = (await h.deps.store.load(sid)).messages
            check_alternation(messages_from_dicts(messages))
            # The grace call's tool call was recorded but never run.
            assert "c3" in json.dumps(messages) and messages[-1]["content"] == "Summary: I planned three steps."


class TestTimeBudget:
    """A turn's time budget is a deadline on its work scope."""

    async def test_time_budget_cancels_tools_then_grace_answer(self, tmp_path: Path) -> None:
        """Running tools are cancelled with reason budget; one call without tools answers."""
        config = Config(agent=AgentConfig(turn_time_budget_seconds=1.0))
        async with open_harness(tmp_path, config) as h:
            register_slow_tool(h)
            handle, events_in, sid = await h.start_session(toolsets=("hermes-cli", "probe"))
            h.provider.push(
                {"tool_calls": [{"id": "p1", "name": "slow_probe", "arguments": {"n": 1}}]},
                {"text": "Out of time; here is what I have."},
            )
            finished, events = await run_turn(handle, events_in, "probe")
            assert finished.reason == "budget"
            assert finished.final_text == "Out of time; here is what I have."
            assert any(isinstance(e, StatusUpdate) and e.kind == "budget" for e in events)
            assert [p for p in h.system.registry.paths() if "/tool:" in p or "/llm" in p] == []
            check_alternation(messages_from_dicts((await h.deps.store.load(sid)).messages))


class TestApprovals:
    """Dangerous commands wait for a person; the first answer wins; silence denies."""

    async def test_approve_once_runs_the_command(self, tmp_path: Path) -> None:
        """After 'once', the command runs and both clients see the resolution."""
        async with open_harness(tmp_path) as h:
            handle, events_in, sid = await h.start_session()
            other = await handle.ask(Subscribe("second client"))
            (h.workdir / "victim.txt").write_text("x")
            h.provider.push(
                {"tool_calls": [{"id": "t1", "name": "terminal", "arguments": {"command": "rm -r victim.txt"}}]},
                {"text": "removed"},
            )
            await handle.tell(UserMessage("clean up"))
            seen: list[SessionEvent] = []
            request = await wait_for(events_in, lambda e: isinstance(e, ApprovalRequested), seen)
            assert "rm" in request.command
            assert await handle.ask(AnswerRequest(request.request_id, "once", "first client")) is True
            assert await handle.ask(AnswerRequest(request.request_id, "deny", "second client")) is False
            finished, rest = await collect_turn(events_in)
            assert finished.final_text == "removed"
            assert not (h.workdir / "victim.txt").exists()
            resolved = [e for e in seen + rest if isinstance(e, RequestResolved)]
            assert [(e.answer, e.resolved_by) for e in resolved] == [("once", "first client")]
            other_events = []
            while (event := other.receive_nowait()) is not None:
                other_events.append(event)
            assert any(isinstance(e, RequestResolved) for e in other_events)

    async def test_unanswered_request_times_out_to_deny(self, tmp_path: Path) -> None:
        """Nobody answers within the deadline: denied, and the model is told plainly."""
        config = Config(approvals=ApprovalsConfig(timeout=0.5))
        async with open_harness(tmp_path, config) as h:
            handle, events_in, sid = await h.start_session()
            (h.workdir / "keep.txt").write_text("x")
            h.provider.push(
                {"tool_calls": [{"id": "t1", "name": "terminal", "arguments": {"command": "rm -r keep.txt"}}]},
                {"text": "could not"},
            )
            finished, events = await run_turn(handle, events_in, "clean up")
            assert (h.workdir / "keep.txt").exists()
            tool = next(m for m in (await h.deps.store.load(sid)).messages if m["role"] == "tool")
            assert "denied" in tool["content"]
            # Whichever deadline fires first (the session's or the terminal's own backstop,
            # both approvals.timeout), every client is told the prompt is gone.
            assert [e.resolved_by for e in events if isinstance(e, RequestResolved)] in (["nobody in time"], ["no one: the turn stopped waiting"])
            assert "no answer within 0.5 s" in tool["content"]

    async def test_pending_request_shown_again_on_attach(self, tmp_path: Path) -> None:
        """A client attaching while a request waits is shown it."""
        async with open_harness(tmp_path) as h:
            handle, events_in, sid = await h.start_session()
            h.provider.push(
                {"tool_calls": [{"id": "t1", "name": "terminal", "arguments": {"command": "rm -rf nothing.txt"}}]},
                {"text": "done"},
            )
            await handle.tell(UserMessage("go"))
            seen: list[SessionEvent] = []
            request = await wait_for(events_in, lambda e: isinstance(e, ApprovalRequested), seen)
            late = await handle.ask(Subscribe("late client"))
            shown = late.receive_nowait()
            assert isinstance(shown, ApprovalRequested) and shown.request_id == request.request_id
            await handle.tell(AnswerRequest(request.request_id, "deny"))
            finished, _ = await collect_turn(events_in)
            assert finished.reason == "completed"

    async def test_subagent_style_session_denies_without_asking(self, tmp_path: Path) -> None:
        """A non-interactive session never waits for a person."""
        async with open_harness(tmp_path) as h:
            handle, events_in, sid = await h.start_session(interactive=False)
            h.provider.push(
                {"tool_calls": [{"id": "t1", "name": "terminal", "arguments": {"command": "rm -rf build"}}]},
                {"text": "denied as expected"},
            )
            with trio.fail_after(10):
                finished, events = await run_turn(handle, events_in, "go")
            assert not any(isinstance(e, ApprovalRequested) for e in events)
            assert finished.final_text == "denied as expected"


class TestApprovalsPersist:
    """'Allow for this session' survives hibernation (the daemon's restart path)."""

    async def test_session_approval_survives_a_restart(self, tmp_path: Path) -> None:
        """After 'session', the same kind of command runs without asking, even after the session is reloaded."""
        from tests.session.test_service import options, start_service

        async with open_harness(tmp_path) as h:
            service = await start_service(h, hibernate_after_seconds=0.3)
            sid = await service.create_session(options(h))
            sub = await (await service.get(sid)).ask(Subscribe("t"))
            for name in ("a.txt", "b.txt"):
                (h.workdir / name).write_text("x")
            h.provider.push({"tool_calls": [{"id": "t1", "name": "terminal", "arguments": {"command": "rm -r a.txt"}}]},
                            {"text": "first gone"})
            await service.send(sid, "remove a")
            seen: list[SessionEvent] = []
            request = await wait_for(sub, lambda e: isinstance(e, ApprovalRequested), seen)
            await (await service.get(sid)).ask(AnswerRequest(request.request_id, "session"))
            await collect_turn(sub)
            sub.close()
            with trio.fail_after(10):
                while service.live(sid) is not None:
                    await trio.sleep(0.05)
            sub = await (await service.get(sid)).ask(Subscribe("t"))
            h.provider.push({"tool_calls": [{"id": "t2", "name": "terminal", "arguments": {"command": "rm -r b.txt"}}]},
                            {"text": "second gone"})
            await service.send(sid, "remove b")
            finished, events = await collect_turn(sub)
            assert finished.final_text == "second gone"
            assert not any(isinstance(e, ApprovalRequested) for e in events)
            assert not (h.workdir / "b.txt").exists()


class TestClarifyDeadline:
    """The session's own deadline labels an expired prompt as a timeout: the CLI's clarify.timeout, a chat
    platform's agent.clarify_timeout."""

    async def _expire(self, tmp_path: Path, config: Config, source: str) -> tuple[list[str], dict]:
        async with open_harness(tmp_path, config) as h:
            handle, events_in, sid = await h.start_session(source=source)
            h.provider.push(
                {"tool_calls": [{"id": "q1", "name": "clarify", "arguments": {"question": "Which file?", "choices": ["a", "b"]}}]},
                {"text": "I will pick one myself"},
            )
            with trio.fail_after(30):
                _, events = await run_turn(handle, events_in, "tidy up")
            tool = next(m for m in (await h.deps.store.load(sid)).messages if m["role"] == "tool")
            return [e.resolved_by for e in events if isinstance(e, RequestResolved)], json.loads(tool["content"])

    async def test_unanswered_clarify_expires_as_timeout(self, tmp_path: Path) -> None:
        """A CLI question nobody answers within clarify.timeout resolves as expired ("nobody in time"), and
        the model is told to decide itself (not that clarify is unavailable), in Hermes's three fields."""
        config = Config(clarify=ClarifyConfig(timeout=0.3), agent=AgentConfig(clarify_timeout=3600.0))
        resolved_by, result = await self._expire(tmp_path, config, "cli")
        assert resolved_by == ["nobody in time"]
        assert result == {"question": "Which file?", "choices_offered": ["a", "b"], "user_response": TIMEOUT_ANSWER}

    async def test_a_chat_platform_waits_agent_clarify_timeout(self, tmp_path: Path) -> None:
        """A Telegram question expires by agent.clarify_timeout, whatever clarify.timeout says."""
        config = Config(clarify=ClarifyConfig(timeout=3600.0), agent=AgentConfig(clarify_timeout=0.3))
        resolved_by, result = await self._expire(tmp_path, config, "telegram")
        assert resolved_by == ["nobody in time"] and result["user_response"] == TIMEOUT_ANSWER
