"""delegate_task: parallel children, limits, cascade, per-child control."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import trio

from conversation.history import check_alternation
from config.delegation import DelegationConfig
from config.loader import Config
from messages.chat import messages_from_dicts
from messages.events import SessionEvent, ToolProgress, ToolStarted
from messages.session import Interrupt, Steer, UserMessage
from tests.session.harness import Harness, collect_turn, open_harness, run_turn
from tests.session.test_interrupts import wait_for
from tests.tools.helpers import echo_handler, schema


def delegate(*tasks: dict[str, Any]) -> dict[str, Any]:
    return {"tool_calls": [{"id": "d1", "name": "delegate_task", "arguments": {"tasks": list(tasks)}}]}


def child_requests(h: Harness) -> list[Any]:
    return [r for r in h.provider.requests if "subagent" in json.dumps(r.body["messages"][0]).lower()]


def result_of(messages: list[dict[str, Any]]) -> dict[str, Any]:
    return json.loads(next(m for m in messages if m["role"] == "tool" and m["tool_call_id"] == "d1")["content"])


class TestParallelChildren:
    """A batch runs all at once; the parent waits for all."""

    async def test_three_children_take_one_latency(self, tmp_path: Path) -> None:
        """Three children each waiting 1 s on the provider finish in about 1 s, results in task order."""
        async with open_harness(tmp_path) as h:
            handle, events_in, sid = await h.start_session()
            h.provider.push(
                delegate({"goal": "alpha", "context": "ctx-A"}, {"goal": "beta"}, {"goal": "gamma"}),
                *({"text": "child done", "delay_first_byte": 1.0} for _ in range(3)),
                {"text": "all three reported"},
            )
            started = trio.current_time()
            finished, _ = await run_turn(handle, events_in, "split the work")
            elapsed = trio.current_time() - started
            assert finished.final_text == "all three reported"
            assert elapsed < 2.6, f"children ran one after another ({elapsed:.2f}s)"
            result = result_of((await h.deps.store.load(sid)).messages)
            assert [r["task_index"] for r in result["results"]] == [0, 1, 2]
            assert all(r["status"] == "completed" and r["summary"] == "child done" for r in result["results"])
            first_child = next(r for r in child_requests(h) if "alpha" in json.dumps(r.body))
            system = json.dumps(first_child.body["messages"][0])
            assert "alpha" in system and "ctx-A" in system and str(h.workdir) in system
            assert "\\nModel: scripted-model\\nProvider: custom" in system, "a child's prompt ends as Hermes's do"

    async def test_blocked_tools_absent_from_child_requests(self, tmp_path: Path) -> None:
        """clarify, memory, execute_code, cronjob and delegate_task never reach a leaf child's schema."""
        async with open_harness(tmp_path) as h:
            # The daemon registers cronjob beside its cron actor; a stand-in is enough to be offered.
            h.deps.registry.register("cronjob", "cronjob", schema(), echo_handler)
            handle, events_in, sid = await h.start_session()
            h.provider.push(delegate({"goal": "look around"}), {"text": "looked"}, {"text": "fine"})
            await run_turn(handle, events_in, "go")
            [child] = child_requests(h)
            names = {t.get("function", t).get("name") for t in child.body.get("tools", [])}
            assert names and not names & {"clarify", "memory", "execute_code", "delegate_task", "cronjob"}
            assert "terminal" in names
            parent = {t.get("function", t).get("name") for t in h.provider.requests[0].body.get("tools", [])}
            assert "cronjob" in parent

    async def test_too_many_tasks_is_a_clear_error(self, tmp_path: Path) -> None:
        """More tasks than max_concurrent_children is refused with the limit in the text."""
        async with open_harness(tmp_path) as h:
            handle, events_in, sid = await h.start_session()
            h.provider.push(delegate(*({"goal": f"g{i}"} for i in range(4))), {"text": "ok"})
            await run_turn(handle, events_in, "go")
            result = result_of((await h.deps.store.load(sid)).messages)
            assert "at most 3" in result["error"]


class TestDepth:
    """Depth is enforced on every spawn path."""

    async def test_orchestrator_child_may_delegate_at_depth_two(self, tmp_path: Path) -> None:
        """With max_spawn_depth 2, an orchestrator child has delegate_task and its child is a leaf."""
        config = Config(delegation=DelegationConfig(max_spawn_depth=2))
        async with open_harness(tmp_path, config) as h:
            handle, events_in, sid = await h.start_session()
            h.provider.push(
                delegate({"goal": "orchestrate", "role": "orchestrator"}),
                {"tool_calls": [{"id": "d2", "name": "delegate_task", "arguments": {"goal": "leaf work"}}]},
                {"text": "leaf done"},
                {"text": "orchestrated"},
                {"text": "top done"},
            )
            finished, _ = await run_turn(handle, events_in, "go deep")
            assert finished.final_text == "top done"
            children = child_requests(h)
            tools_of = [{t.get("function", t).get("name") for t in r.body.get("tools", [])} for r in children]
            assert "delegate_task" in tools_of[0]
            leaf = next(t for r, t in zip(children, tools_of) if "leaf work" in json.dumps(r.body["messages"][0]))
            assert "delegate_task" not in leaf
            result = result_of((await h.deps.store.load(sid)).messages)
            assert result["results"][0]["summary"] == "orchestrated"


    async def test_an_orchestrator_at_the_depth_limit_runs_as_a_leaf(self, tmp_path: Path) -> None:
        """At max_spawn_depth 1 an orchestrator child is not refused: it runs without delegate_task."""
        async with open_harness(tmp_path) as h:
            handle, events_in, sid = await h.start_session()
            h.provider.push(delegate({"goal": "orchestrate", "role": "orchestrator"}), {"text": "did it alone"}, {"text": "top"})
            finished, _ = await run_turn(handle, events_in, "go")
            [child] = child_requests(h)
            assert "delegate_task" not in {t.get("function", t).get("name") for t in child.body.get("tools", [])}
            result = result_of((await h.deps.store.load(sid)).messages)
            assert result["results"][0]["status"] == "completed" and result["results"][0]["summary"] == "did it alone"


class TestCancellation:
    """Interrupt cascades; kill and steer reach one child by path."""

    async def test_interrupt_cascades_to_children(self, tmp_path: Path) -> None:
        """Interrupting the parent stops every child mid-stream; nothing is left; the next turn works."""
        async with open_harness(tmp_path) as h:
            handle, events_in, sid = await h.start_session()
            h.provider.push(delegate({"goal": "a"}, {"goal": "b"}), *({"text": "never", "delay_first_byte": 30} for _ in range(2)))
            await handle.tell(UserMessage("go"))
            seen: list[SessionEvent] = []
            await wait_for(events_in, lambda e: isinstance(e, ToolStarted) and e.name == "delegate_task", seen)
            with trio.fail_after(10):
                # Both children's calls reached the provider (an llm job in the tree may not have sent yet,
                # and a step never asked for would answer the next turn).
                while len(h.provider.requests) < 3:
                    await trio.sleep(0.02)
            assert len([p for p in h.system.registry.paths() if p.endswith("/llm") and "subagent" in p]) == 2
            await handle.tell(Interrupt())
            finished, _ = await collect_turn(events_in)
            assert finished.reason == "interrupted"
            assert [p for p in h.system.registry.paths() if p] == [f"session:{sid}"]
            h.provider.push({"text": "back"})
            finished, _ = await run_turn(handle, events_in, "again")
            assert finished.final_text == "back"
            check_alternation(messages_from_dicts((await h.deps.store.load(sid)).messages))

    async def test_kill_one_child_siblings_finish(self, tmp_path: Path) -> None:
        """An operator's kill reports that task interrupted; its sibling completes."""
        async with open_harness(tmp_path) as h:
            handle, events_in, sid = await h.start_session()
            h.provider.push(delegate({"goal": "a"}, {"goal": "b"}), *({"text": "sibling done", "delay_first_byte": 1.5} for _ in range(2)), {"text": "parent done"})
            await handle.tell(UserMessage("go"))
            with trio.fail_after(10):
                while len(h.provider.requests) < 3:  # both children have asked the model
                    await trio.sleep(0.02)
            path = next(p for p in h.system.registry.paths() if p.endswith("subagent:0"))
            h.system.lookup(path).stop("killed by operator", requested_by="cli")
            finished, _ = await collect_turn(events_in)
            assert finished.final_text == "parent done"
            results = result_of((await h.deps.store.load(sid)).messages)["results"]
            assert (results[0]["status"], results[0]["exit_reason"]) == ("interrupted", "stopped by operator")
            assert results[1]["status"] == "completed"

    async def test_kill_one_delegate_job_returns_its_report(self, tmp_path: Path) -> None:
        """A subagent is a job returning its report: killing ``delegate:0`` by path stops that child
        and reports it interrupted; its sibling completes and the parent's turn goes on."""
        async with open_harness(tmp_path) as h:
            handle, events_in, sid = await h.start_session()
            h.provider.push(delegate({"goal": "a"}, {"goal": "b"}), *({"text": "sibling done", "delay_first_byte": 1.5} for _ in range(2)), {"text": "parent done"})
            await handle.tell(UserMessage("go"))
            with trio.fail_after(10):
                while len(h.provider.requests) < 3:  # both children have asked the model
                    await trio.sleep(0.02)
            job = next(p for p in h.system.registry.paths() if p.endswith("/delegate:0"))
            assert h.system.lookup(job).statistics().kind == "delegate"
            h.system.lookup(job).stop("enough", requested_by="cli")
            finished, _ = await collect_turn(events_in)
            assert finished.final_text == "parent done"
            results = result_of((await h.deps.store.load(sid)).messages)["results"]
            assert [r["task_index"] for r in results] == [0, 1]
            assert (results[0]["status"], results[0]["exit_reason"]) == ("interrupted", "stopped by operator")
            assert results[0]["model"] and results[0]["duration_seconds"] > 0
            assert (results[1]["status"], results[1]["summary"]) == ("completed", "sibling done")
            assert [p for p in h.system.registry.paths() if p] == [f"session:{sid}"]

    async def test_steer_one_child_by_path(self, tmp_path: Path) -> None:
        """A steer sent to a child's path reaches that child's next model call."""
        async with open_harness(tmp_path) as h:
            handle, events_in, sid = await h.start_session()
            h.provider.push(
                delegate({"goal": "work slowly"}),
                {"tool_calls": [{"id": "s1", "name": "terminal", "arguments": {"command": "sleep 1; echo ok"}}]},
                {"text": "child adjusted"},
                {"text": "parent done"},
            )
            await handle.tell(UserMessage("go"))
            seen: list[SessionEvent] = []
            await wait_for(events_in, lambda e: isinstance(e, ToolStarted) and e.name == "terminal", seen)
            child = next(p for p in h.system.registry.paths() if p.endswith("subagent:0"))
            await h.system.lookup(child).ask(Steer("use the fast path"))
            finished, _ = await collect_turn(events_in)
            assert finished.final_text == "parent done"
            assert "use the fast path" in json.dumps(child_requests(h)[-1].body)


class TestHeartbeat:
    """A child with no progress is marked stale and the parent is told."""

    async def test_stale_child_is_reported(self, tmp_path: Path) -> None:
        """No event for stale_idle_seconds: the child's activity says stale and a progress line reaches the parent."""
        config = Config(delegation=DelegationConfig(stale_idle_seconds=0.3))
        async with open_harness(tmp_path, config) as h:
            handle, events_in, sid = await h.start_session()
            h.provider.push(delegate({"goal": "think"}), {"text": "slow answer", "delay_first_byte": 1.2}, {"text": "ok"})
            finished, events = await run_turn(handle, events_in, "go")
            assert finished.final_text == "ok"
            assert any(isinstance(e, ToolProgress) and "stale" in e.text for e in events)
