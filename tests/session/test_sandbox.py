"""execute_code inside a session: the script's tool calls run through the session."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio

import actors.sandbox.server as server_module
import actors.session.sandboxing as sandboxing_module
import actors.session.workers as workers_module
from actors.sandbox.calls import CallTool, RpcCallJob
from actors.sandbox.readers import REFUSALS_BEFORE_THREAD
from actors.session import SessionActor
from actors.session.sandboxing import MAX_HELD_CALLS, _ScriptLines
from actors.session.workers import ToolExecutor
from config.session import GuardrailsConfig
from config.loader import Config
from conversation.guardrails import ToolCallGuardrailController
from conversation.history import check_alternation
from messages.chat import messages_from_dicts
from messages.events import ToolFinished, ToolProgress, ToolStarted
from tests.sandbox.test_spare import _left_behind, _processes_naming
from tests.session.harness import open_harness, run_turn
from tests.tools import test_dispatch
from tests.tools.helpers import scans_for_secrets
from tools.results import ToolReply
from tools.testing import LocalToolContext

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


REFUSING = """
import hermes_tools
for _ in range(600):
    hermes_tools._call('memory', {})
"""
REFUSING_UNTIL_KILLED = """
import os, signal, hermes_tools
answered = 0
def stop(*_):
    print(answered, flush=True)
    os._exit(0)
signal.signal(signal.SIGTERM, stop)
while True:
    hermes_tools._call('memory', {})
    answered += 1
"""


class TestRunsOfRefusals:
    """A script's run of refused calls (answered by a thread of its connection's own) is in the transcript whole,
    whether the script ends or is killed in the middle of it."""

    async def test_counted_whole_when_the_script_ends(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(server_module, "MAX_RECORDED_REFUSALS", 3)
        async with open_harness(tmp_path) as h:
            handle, events_in, sid = await h.start_session()
            h.provider.push(
                {"tool_calls": [{"id": "x1", "name": "execute_code", "arguments": {"code": REFUSING}}]},
                {"text": "done"},
            )
            await run_turn(handle, events_in, "run it")
            transcript = [r.record for r in await h.deps.store.load_transcript(sid)]
        assert [r.get("tool") for r in transcript[:3]] == ["memory"] * 3
        assert transcript[3:] == [{"kind": "sandbox_tool_calls_unrecorded", "refused": 597}]

    async def test_recorded_whole_when_the_script_is_killed(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(server_module, "MAX_RECORDED_REFUSALS", 10**9)
        config = Config()
        config = attrs.evolve(config, code_execution=attrs.evolve(config.code_execution, timeout=1.0))
        async with open_harness(tmp_path, config) as h:
            handle, events_in, sid = await h.start_session()
            h.provider.push(
                {"tool_calls": [{"id": "x1", "name": "execute_code", "arguments": {"code": REFUSING_UNTIL_KILLED}}]},
                {"text": "done"},
            )
            await run_turn(handle, events_in, "run it")
            result = json.loads(next(m for m in (await h.deps.store.load(sid)).messages if m["role"] == "tool")["content"])
            transcript = [r.record for r in await h.deps.store.load_transcript(sid)]
        assert result["status"] == "timeout", result
        answered = int(result["output"].split()[0])
        assert answered > REFUSALS_BEFORE_THREAD  # the run reached the thread
        # Every call the script was answered is recorded; one more when it was killed before reading its answer.
        assert len(transcript) - answered in (0, 1)
        assert {(r["tool"], r["ok"]) for r in transcript} == {("memory", False)}


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


REJECTED = """
import json, hermes_tools
for _ in range(3):
    print(json.dumps(hermes_tools.write_file('', 'x')))
print(json.dumps(hermes_tools.read_file('notes.txt')['content']))
print(json.dumps(hermes_tools.write_file('', 'x')))
"""
EMPTY_PATH = "write_file: missing required field 'path'. Re-emit the tool call with both 'path' and 'content' set."


class TestRejectedCallsAnsweredAtOnce:
    """A script's call its tool rejects before running starts no job, and is answered and recorded as through one."""

    @staticmethod
    async def _run(
        root: Path, monkeypatch: pytest.MonkeyPatch, *, at_once: bool
    ) -> tuple[dict[str, Any], list[dict[str, Any]], list[tuple[Any, ...]], list[str]]:
        """The execute_code result, the transcript's records, the script's calls' events and the jobs started."""
        jobs: list[str] = []

        class CountedJob(RpcCallJob):
            def __init__(self, tool: str, args: dict[str, Any], call_tool: CallTool) -> None:
                jobs.append(tool)
                super().__init__(tool, args, call_tool)

        monkeypatch.setattr(server_module, "RpcCallJob", CountedJob)
        if not at_once:  # every call through a job, as before calls were answered at once
            monkeypatch.setattr(ToolExecutor, "rejection", lambda self, name, args, ctx: None, raising=False)
        root.mkdir()
        async with open_harness(root) as h:
            (h.workdir / "notes.txt").write_text("a note\n")
            handle, events_in, sid = await h.start_session()
            h.provider.push(
                {"tool_calls": [{"id": "x1", "name": "execute_code", "arguments": {"code": REJECTED}}]},
                {"text": "done"},
            )
            _, events = await run_turn(handle, events_in, "run it")
            result = json.loads(next(m for m in (await h.deps.store.load(sid)).messages if m["role"] == "tool")["content"])
            del result["duration_seconds"]
            records = [{k: v for k, v in r.record.items() if k != "duration_seconds"} for r in await h.deps.store.load_transcript(sid)]
        shown = [
            (type(e).__name__, e.call_id, e.name, getattr(e, "args_preview", None), getattr(e, "ok", None),
             getattr(e, "result_preview", None))
            for e in events if isinstance(e, (ToolStarted, ToolFinished)) and e.parent_call_id == "x1"
        ]
        return result, records, shown, jobs

    async def test_same_answer_record_events_and_loop_warning(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        root = tmp_path / "run"  # the same for both runs: paths show in the results
        with monkeypatch.context() as patched:
            through_jobs = await self._run(root, patched, at_once=False)
        shutil.rmtree(root)
        result, records, shown, jobs = await self._run(root, monkeypatch, at_once=True)
        assert jobs == ["read_file"] and through_jobs[3] == ["write_file"] * 3 + ["read_file", "write_file"]
        # The same answers, records and tool lines, in the same order (the lines of calls answered at once
        # are shown before the next call that runs, and at the end).
        assert (result, records, shown) == through_jobs[:3]
        assert result["status"] == "success" and result["tool_calls_made"] == 5
        first, *warned, note, last = [json.loads(line) for line in result["output"].splitlines()]
        assert (first, note) == ({"error": EMPTY_PATH}, "1|a note")
        # The guardrails counted each failure: from the second on, they carry the loop warning.
        for count, text in [*enumerate(warned, start=2), (4, last)]:
            assert text.startswith(json.dumps({"error": EMPTY_PATH}) + "\n\n[Tool loop warning: repeated_exact_failure_warning; ")
            assert f"count={count};" in text
        failed = ("write_file", False, EMPTY_PATH)
        assert [(r["tool"], r["ok"], r["error"]) for r in records] == [failed] * 3 + [("read_file", True, None), failed]
        assert [(s[0], s[2]) for s in shown] == [
            (kind, tool) for tool in ["write_file"] * 3 + ["read_file", "write_file"] for kind in ("ToolStarted", "ToolFinished")
        ]

    async def test_held_lines_are_redacted(self, tmp_path: Path) -> None:
        """The tool lines of a call answered at once, made when they are shown, show no secret it carried."""
        secret = "sk-" + "a1B2c3D4" * 5
        code = f"import hermes_tools\nprint(hermes_tools.write_file('', 'OPENAI_API_KEY={secret}'))\n"
        async with open_harness(tmp_path) as h:
            handle, events_in, sid = await h.start_session()
            h.provider.push(
                {"tool_calls": [{"id": "x1", "name": "execute_code", "arguments": {"code": code}}]},
                {"text": "done"},
            )
            _, events = await run_turn(handle, events_in, "run it")
            records = [r.record for r in await h.deps.store.load_transcript(sid)]
        shown = [e for e in events if isinstance(e, (ToolStarted, ToolFinished)) and e.parent_call_id == "x1"]
        assert [(type(e), e.name) for e in shown] == [(ToolStarted, "write_file"), (ToolFinished, "write_file")]
        started = shown[0]
        assert isinstance(started, ToolStarted) and "[REDACTED]" in started.args_preview and "content" in started.args_preview
        assert not any(secret in repr(e) for e in shown) and secret not in repr(records)


REPEATED = """
import json, hermes_tools
def answer(tool, args):
    try:
        return json.dumps(hermes_tools._call(tool, args))
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
def call(n, content):
    for _ in range(n):
        print(answer('write_file', {'path': '', 'content': content}))
call(40, 'x')
print(answer('read_file', {'path': 'notes.txt'}))
call(30, 'x')
call(20, 'y')
print(answer('memory', {}))
call(3, 'y')
for _ in range(3):
    print(answer('memory', {}))
call(20, 'y')
"""


class _ConnectionSteps(trio.abc.Instrument):
    """Counts the event loop's steps of the RPC connections' tasks (the tasks that serve them) while installed."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.steps = 0
        self.tasks: set[trio.lowlevel.Task] = set()
        serve = server_module.RpcServer._serve_authenticated

        async def noted(server: Any, conn: Any) -> None:
            self.tasks.add(trio.lowlevel.current_task())
            await serve(server, conn)

        monkeypatch.setattr(server_module.RpcServer, "_serve_authenticated", noted)

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        if task in self.tasks:
            self.steps += 1


class TestRepeatedRejectionsOffTheLoop:
    """A failing call a script makes again unchanged is answered by its connection's thread with the answer, record,
    tool lines and guardrail counts the event loop gives it, call by call."""

    @staticmethod
    async def _run(
        root: Path, monkeypatch: pytest.MonkeyPatch, config: Config, *, thread: bool
    ) -> tuple[tuple[Any, ...], int, int]:
        """(the execute_code result, the transcript's records, the script's calls' events, the turn's end), the
        calls the thread answered, and the event loop's steps of the connection's task."""
        answered: list[str] = []
        record_repeated = server_module.RpcServer._record_repeated

        def counted(self: Any, repeating: Any, call: Any) -> None:
            answered.append(call.text)
            record_repeated(self, repeating, call)

        monkeypatch.setattr(server_module.RpcServer, "_record_repeated", counted)
        if not thread:  # every call answered on the event loop
            monkeypatch.setattr(ToolExecutor, "rejected_again", lambda self, name, args, ctx: None)
        root.mkdir()
        async with open_harness(root, config) as h:
            (h.workdir / "notes.txt").write_text("a note\n")
            handle, events_in, sid = await h.start_session()
            h.provider.push(
                {"tool_calls": [{"id": "x1", "name": "execute_code", "arguments": {"code": REPEATED}}]},
                {"text": "done"},
            )
            steps = _ConnectionSteps(monkeypatch)
            trio.lowlevel.add_instrument(steps)
            try:
                finished, events = await run_turn(handle, events_in, "run it")
            finally:
                trio.lowlevel.remove_instrument(steps)
            result = json.loads(next(m for m in (await h.deps.store.load(sid)).messages if m["role"] == "tool")["content"])
            del result["duration_seconds"]
            records = [{k: v for k, v in r.record.items() if k != "duration_seconds"} for r in await h.deps.store.load_transcript(sid)]
            turn_end = [m["content"] for m in (await h.deps.store.load(sid)).messages if m["role"] == "assistant"]
        shown = [
            (type(e).__name__, e.call_id, e.name, getattr(e, "args_preview", None), getattr(e, "ok", None),
             getattr(e, "result_preview", None))
            for e in events if isinstance(e, (ToolStarted, ToolFinished)) and e.parent_call_id == "x1"
        ]
        return (result, records, shown, turn_end, finished.reason), len(answered), steps.steps

    async def _compare(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, config: Config) -> tuple[Any, int, int, int]:
        root = tmp_path / "run"  # the same for both runs: paths show in the results
        with monkeypatch.context() as patched:
            on_loop, none, loop_steps = await self._run(root, patched, config, thread=False)
        shutil.rmtree(root)
        off_loop, answered, steps = await self._run(root, monkeypatch, config, thread=True)
        assert none == 0
        assert off_loop[0]["output"].splitlines() == on_loop[0]["output"].splitlines()  # call by call
        assert off_loop == on_loop
        return off_loop, answered, steps, loop_steps

    async def test_warnings_counts_and_records_as_on_the_loop(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        config = Config()
        config = attrs.evolve(config, code_execution=attrs.evolve(config.code_execution, max_tool_calls=1000))
        (result, records, shown, _, _), answered, steps, loop_steps = await self._compare(tmp_path, monkeypatch, config)
        outputs = result["output"].splitlines()
        assert len(outputs) == 118 and result["tool_calls_made"] == 114
        # Each failure is counted: its own count, then its tool's (other arguments), in the warning's text.
        assert "count=40;" in outputs[39] and "count=70;" in outputs[70]
        assert "same_tool_failure_warning; count=71;" in outputs[71] and "count=2;" in outputs[72]
        assert "repeated_exact_failure_warning; count=43;" in outputs[-1]
        assert [r["tool"] for r in records].count("memory") == 4 and len(records) == 118
        assert len(shown) == 2 * 114
        # Most of the calls made again were answered by the thread: the connection's task took a step for each
        # call on the loop, a few per trip of the thread.
        assert answered >= 90
        assert loop_steps >= 114 and steps < loop_steps - answered + 20

    async def test_hard_stops_block_where_on_the_loop(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        guardrails = GuardrailsConfig(hard_stop_enabled=True)
        config = attrs.evolve(Config(), tool_loop_guardrails=guardrails)
        (result, _, _, _, _), answered, _, _ = await self._compare(tmp_path, monkeypatch, config)
        outputs = result["output"].splitlines()
        assert "repeated_exact_failure_warning; count=4;" in outputs[3]
        assert "[Tool loop blocked: repeated_exact_failure_block; count=5;" in outputs[5]
        assert answered >= 2

    async def test_the_call_limit_as_on_the_loop(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        config = Config()
        config = attrs.evolve(config, code_execution=attrs.evolve(config.code_execution, max_tool_calls=30))
        (result, records, _, _, _), answered, _, _ = await self._compare(tmp_path, monkeypatch, config)
        outputs = result["output"].splitlines()
        assert "count=30;" in outputs[29] and "Tool call limit reached (30)" in outputs[30]
        assert result["tool_calls_made"] == 30 and len(records) == 118
        assert answered >= 20


class TestRejectedWithoutCheckpoint:
    """A call answered at once asks for no checkpoint (it changes no file; asking took the checkpoints' lock, a
    scheduler pass); a file tool's call that runs still does, before it runs."""

    class _Context(LocalToolContext):
        asked: list[str]

        def checkpoint_due(self) -> bool:
            return False  # one was taken this turn already

        async def before_change(self, tool: str, detail: str = "") -> None:
            self.asked.append(tool)

    async def test_rejected_call_asks_for_none(self, tmp_path: Path) -> None:
        ran: list[dict[str, Any]] = []
        executor = ToolExecutor(
            test_dispatch.TestRejections._registry(ran), ToolCallGuardrailController(GuardrailsConfig(), lambda name: False)
        )
        ctx = self._Context(home=tmp_path, cwd=tmp_path)
        ctx.asked = []
        args = {"path": ""}
        rejection = executor.rejection("write_file", args, ctx)  # type: ignore[arg-type]  # what it calls is here
        assert rejection is not None
        reply = await executor.reject("write_file", args, rejection, ctx)  # type: ignore[arg-type]  # as above
        assert not reply.ok and "the path is empty" in reply.text and ctx.asked == []
        await executor.execute("write_file", {"path": "a"}, ctx)  # type: ignore[arg-type]  # as above
        assert ctx.asked == ["write_file"] and ran == [{"path": "a"}]


class TestHeldLines:
    """The lines of calls answered at once are held until a call is recorded with MAX_HELD_CALLS held, or shown."""

    class _Shown:
        call_id = "x1"

        def __init__(self) -> None:
            self.events: list[tuple[str, dict[str, Any]]] = []

        def show_inner_call(self, event: type, **fields: Any) -> None:
            self.events.append((event.__name__, fields))

    async def test_shown_when_recorded_with_enough_held(self) -> None:
        ctx = self._Shown()
        lines = _ScriptLines(ctx)  # type: ignore[arg-type]  # only call_id and show_inner_call are used

        async def failed() -> ToolReply:
            return ToolReply.failure("no path")

        for number in range(MAX_HELD_CALLS):
            lines.show_if_many()  # the previous call's record
            assert ctx.events == []
            await lines.answer_at_once("write_file", {"path": "", "n": number}, failed)
        lines.show_if_many()
        assert [name for name, _ in ctx.events] == ["ToolStarted", "ToolFinished"] * MAX_HELD_CALLS
        assert [fields["call_id"] for _, fields in ctx.events[::2]] == [f"x1.{n}" for n in range(1, MAX_HELD_CALLS + 1)]
        assert ctx.events[-1][1]["result_preview"] == '{"error": "no path"}' and not ctx.events[-1][1]["ok"]
        assert ctx.events[-2][1]["args_preview"] == f'{{"path": "", "n": {MAX_HELD_CALLS - 1}}}'


    async def test_the_same_arguments_are_previewed_once(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A call retried with the same arguments shows the same preview, made once; other arguments get theirs."""
        made: list[Any] = []

        def counted(value: Any, limit: int = 160, **options: Any) -> str:
            made.append(value)
            return workers_module.preview(value, limit, **options)

        monkeypatch.setattr(sandboxing_module, "preview", counted)
        ctx = self._Shown()
        lines = _ScriptLines(ctx)  # type: ignore[arg-type]  # only call_id and show_inner_call are used

        async def failed() -> ToolReply:
            return ToolReply.failure("no path")

        calls = [{"path": "", "content": "x"}] * 3 + [{"path": "", "content": "y"}, {"content": "x", "path": ""}]
        for args in calls:
            await lines.answer_at_once("write_file", args, failed)
        lines.show_held()
        shown = [fields["args_preview"] for name, fields in ctx.events if name == "ToolStarted"]
        assert shown == [workers_module.preview(args) for args in calls]
        assert len(made) == 5 + 3  # a result preview per call; the arguments' for the first and each change


    async def test_results_differing_in_a_count_are_looked_at_once(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Results that differ but for their digits (a loop warning's count) are told free of secrets in one look;
        each line shows its own result."""
        expected = [workers_module.preview(ToolReply.failure(f"no path, {n} times").text) for n in range(20)]
        looked = scans_for_secrets(monkeypatch)
        ctx = self._Shown()
        lines = _ScriptLines(ctx)  # type: ignore[arg-type]  # only call_id and show_inner_call are used
        for n in range(20):
            async def failed(n: int = n) -> ToolReply:
                return ToolReply.failure(f"no path, {n} times")

            await lines.answer_at_once("write_file", {"path": ""}, failed)
        lines.show_held()
        assert [fields["result_preview"] for name, fields in ctx.events if name == "ToolFinished"] == expected
        assert len(looked) == 2  # the arguments' preview (made once), the first result's


class TestSpareInterpreter:
    """A session's next script runs in the interpreter started after its last one; the spare dies with the session."""

    async def test_second_script_runs_warm_and_nothing_outlives_the_session(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        runs = _runs_dir(monkeypatch)
        try:
            async with open_harness(tmp_path) as h:
                handle, outputs = await _two_scripts(h)
                assert outputs == [["cold", "__main__"], ["warm", "__main__"]]
                # The next run's spare starts after the run has answered: waited for, so there is one to stop.
                session = h.system.registry._actors[handle.path]
                assert isinstance(session, SessionActor) and session.spares is not None
                assert await session.spares.started()
                assert os.listdir(runs)
                handle.stop("test over")
                with trio.fail_after(10):
                    await handle.wait_stopped()
                assert await _left_behind(runs) == ([], [])
        finally:
            shutil.rmtree(runs, ignore_errors=True)

    async def test_switched_off(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        runs = _runs_dir(monkeypatch)
        config = Config()
        config = attrs.evolve(config, code_execution=attrs.evolve(config.code_execution, spare_interpreter=False))
        try:
            async with open_harness(tmp_path, config) as h:
                _, outputs = await _two_scripts(h)
                assert outputs == [["cold", "__main__"], ["cold", "__main__"]]
                assert os.listdir(runs) == [] and _processes_naming(runs) == []
        finally:
            shutil.rmtree(runs, ignore_errors=True)


def _runs_dir(monkeypatch: pytest.MonkeyPatch) -> str:
    """A new directory with a short path (the socket's must fit) where the harness's sessions make their runs."""
    runs = tempfile.mkdtemp(prefix="hx-t-", dir="/tmp")
    monkeypatch.setattr(tempfile, "tempdir", runs)
    return runs


async def _two_scripts(h: Any) -> tuple[Any, list[list[str]]]:
    """A new session's handle once it ran two scripts, and what each printed: whether it ran in a spare."""
    code = "import sys, hermes_tools\nprint('warm' if '-c' in sys.orig_argv else 'cold', __name__)\n"
    handle, events_in, sid = await h.start_session()
    for _ in range(2):
        h.provider.push(
            {"tool_calls": [{"id": "x1", "name": "execute_code", "arguments": {"code": code}}]}, {"text": "done"}
        )
        await run_turn(handle, events_in, "run it")
    messages = (await h.deps.store.load(sid)).messages
    return handle, [json.loads(m["content"])["output"].split() for m in messages if m["role"] == "tool"]
