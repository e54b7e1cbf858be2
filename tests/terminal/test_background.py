"""Background processes: real children run by the process actor, driven through the tools."""

from __future__ import annotations

from tests.jail.fixtures import Jails

from pathlib import Path

import attrs
import pytest
import trio

from config.terminal import BackgroundConfig, TerminalConfig
from tests.terminal.helpers import (
    FAST, call, make_ctx, make_tools, note_pid, process, read_pid, wait_dead, wait_for_file,
)  # fmt: skip
from tools.background import BackgroundSpec, ProcessLimitReached, ProcessStatus, ProcessTable, run_background_process


async def _wait_status(ctx, process_id: str, status: str, within: float = 5.0) -> None:
    with trio.fail_after(within):
        while ctx.processes.get(process_id).status.value != status:
            await trio.sleep(0.02)


async def _finished(ctx, process_id: str, within: float = 5.0) -> None:
    """Until the process has ended, without the process tool (whose wait would consume its exit)."""
    with trio.fail_after(within):
        await ctx.processes.get(process_id).wait_finished()


class TestStart:
    """background=true returns a proc id at once; output is kept and pollable."""

    async def test_returns_at_once_with_proc_id(self, jails: Jails, tmp_path: Path, nursery: trio.Nursery) -> None:
        tools, ctx = make_tools(), make_ctx(jails, tmp_path, nursery=nursery)
        with trio.fail_after(2):
            started = await call(tools, ctx, command="echo hello; sleep 30", background=True)
        process_id = started["session_id"]
        assert process_id.startswith("proc_") and len(process_id) == 17
        int(process_id[5:], 16)
        assert started["status"] == "running" and started["pid"] > 0
        assert "process(action='poll'" in started["note"]
        with trio.fail_after(5):
            while "hello" not in (polled := await process(tools, ctx, action="poll", session_id=process_id))["output_preview"]:
                await trio.sleep(0.02)
        assert polled["status"] == "running"
        assert polled["uptime_seconds"] >= 0

    async def test_output_cleaned(self, jails: Jails, tmp_path: Path, nursery: trio.Nursery) -> None:
        """Colour codes are stripped from poll and log (secrets are dispatch's one pass: test_redact_tools)."""
        tools, ctx = make_tools(), make_ctx(jails, tmp_path, nursery=nursery)
        started = await call(tools, ctx, command=r"printf '\033[32mgreen\033[0m text\n'", background=True)
        await process(tools, ctx, action="wait", session_id=started["session_id"], timeout=5)
        polled = await process(tools, ctx, action="poll", session_id=started["session_id"])
        assert polled["output_preview"] == "green text\n"
        logged = await process(tools, ctx, action="log", session_id=started["session_id"])
        assert logged["output"] == "green text"

    async def test_cwd_and_env_of_the_session(self, jails: Jails, tmp_path: Path, nursery: trio.Nursery) -> None:
        tools, ctx = make_tools(), make_ctx(jails, tmp_path, nursery=nursery)
        (tmp_path / "d").mkdir()
        await call(tools, ctx, command="cd d; export MARK=42")
        started = await call(tools, ctx, command='echo "$PWD $MARK"', background=True)
        waited = await process(tools, ctx, action="wait", session_id=started["session_id"], timeout=5)
        assert waited["status"] == "exited" and waited["exit_code"] == 0
        assert waited["output"].strip() == f"{tmp_path / 'd'} 42"

    async def test_a_removed_cwd_moves_up(self, jails: Jails, tmp_path: Path, nursery: trio.Nursery) -> None:
        tools, ctx = make_tools(), make_ctx(jails, tmp_path, nursery=nursery)
        (tmp_path / "gone").mkdir()
        await call(tools, ctx, command="cd gone")
        (tmp_path / "gone").rmdir()
        started = await call(tools, ctx, command="pwd", background=True)
        assert f"{tmp_path / 'gone'} no longer exists" in started["note"]
        waited = await process(tools, ctx, action="wait", session_id=started["session_id"], timeout=5)
        assert (waited["output"].strip(), ctx.shell.cwd) == (str(tmp_path), str(tmp_path))

    async def test_unavailable_without_nursery(self, jails: Jails, tmp_path: Path) -> None:
        tools, ctx = make_tools(), make_ctx(jails, tmp_path)
        result = await call(tools, ctx, command="sleep 1", background=True)
        assert "not available" in result["error"]


class TestNotifications:
    """notify_on_complete and watch_patterns reach the session as notifications."""

    async def test_notify_on_complete(self, jails: Jails, tmp_path: Path, nursery: trio.Nursery) -> None:
        tools, ctx = make_tools(), make_ctx(jails, tmp_path, nursery=nursery)
        started = await call(
            tools, ctx, command="seq 1 3000; exit 4", background=True, notify_on_complete=True
        )
        await _finished(ctx, started["session_id"])
        [note] = ctx.notifications
        assert (note.kind, note.exit_code, note.process_id) == ("completed", 4, started["session_id"])
        assert len(note.output) == 2000 and note.output.endswith("2999\n3000\n")
        assert "finished with exit code 4" in note.to_text()

    async def test_no_notification_without_flag(self, jails: Jails, tmp_path: Path, nursery: trio.Nursery) -> None:
        tools, ctx = make_tools(), make_ctx(jails, tmp_path, nursery=nursery)
        started = await call(tools, ctx, command="true", background=True)
        await process(tools, ctx, action="wait", session_id=started["session_id"], timeout=5)
        assert ctx.notifications == []

    async def test_both_given_drops_watch_with_note(self, jails: Jails, tmp_path: Path, nursery: trio.Nursery) -> None:
        tools, ctx = make_tools(), make_ctx(jails, tmp_path, nursery=nursery)
        started = await call(
            tools, ctx, command="echo ERROR", background=True, notify_on_complete=True, watch_patterns=["ERROR"]
        )
        assert "notify_on_complete is set" in started["watch_patterns_ignored"]
        assert "watch_patterns" not in started
        await _finished(ctx, started["session_id"])
        assert [n.kind for n in ctx.notifications] == ["completed"]

    async def test_watch_rate_limited_then_promoted(self, jails: Jails, tmp_path: Path, nursery: trio.Nursery) -> None:
        # Real process, short windows on the real clock: a match about every 20 ms for 2 s or
        # more, so every 0.5 s window sees suppressed matches even on a loaded machine.
        config = BackgroundConfig(watch_window_seconds=0.5, watch_max_suppressed_windows=3)
        tools, ctx = make_tools(), make_ctx(jails, tmp_path, nursery=nursery, background=config)
        command = "for i in $(seq 1 100); do echo \"tick $i MATCH\"; echo other; sleep 0.02; done; exit 0"
        started = await call(tools, ctx, command=command, background=True, watch_patterns=["MATCH"])
        await _finished(ctx, started["session_id"], within=10)
        kinds = [n.kind for n in ctx.notifications]
        assert kinds == ["watch", "watch", "watch", "watch_disabled", "completed"]
        watches = [n for n in ctx.notifications if n.kind == "watch"]
        assert watches[0].output.startswith("tick 1 MATCH")
        assert all("other" not in n.output for n in watches)
        assert watches[1].suppressed > 0
        assert ctx.notifications[-1].exit_code == 0

    async def test_watch_gives_up_after_its_lifetime_hits(
        self, jails: Jails, tmp_path: Path, nursery: trio.Nursery
    ) -> None:
        """A pattern that keeps matching just past each window stops after watch_max_hits notifications."""
        config = BackgroundConfig(watch_window_seconds=0.01, watch_max_hits=3)
        tools, ctx = make_tools(), make_ctx(jails, tmp_path, nursery=nursery, background=config)
        command = "for i in 1 2 3 4 5 6; do echo \"hit $i\"; sleep 0.05; done"
        started = await call(tools, ctx, command=command, background=True, watch_patterns=["hit"])
        await _finished(ctx, started["session_id"])
        assert [n.kind for n in ctx.notifications] == ["watch", "watch", "watch", "watch_disabled", "completed"]
        assert [n.output for n in ctx.notifications[:3]] == ["hit 1", "hit 2", "hit 3"]

    async def test_last_line_without_newline_is_watched(self, jails: Jails, tmp_path: Path, nursery: trio.Nursery) -> None:
        tools, ctx = make_tools(), make_ctx(jails, tmp_path, nursery=nursery)
        started = await call(tools, ctx, command="printf 'done: READY'", background=True, watch_patterns=["READY"])
        await process(tools, ctx, action="wait", session_id=started["session_id"], timeout=5)
        assert [(n.kind, n.output) for n in ctx.notifications] == [("watch", "done: READY")]

    async def test_global_breaker_across_processes(self, jails: Jails, tmp_path: Path, nursery: trio.Nursery) -> None:
        config = BackgroundConfig(watch_window_seconds=0.01, breaker_max_events=3, breaker_window_seconds=10)
        tools, ctx = make_tools(), make_ctx(jails, tmp_path, nursery=nursery, background=config)
        ids = []
        for _ in range(5):
            started = await call(tools, ctx, command="echo HIT", background=True, watch_patterns=["HIT"])
            ids.append(started["session_id"])
        for process_id in ids:
            await process(tools, ctx, action="wait", session_id=process_id, timeout=5)
        assert [n.kind for n in ctx.notifications] == ["watch"] * 3
        stats = ctx.processes.statistics()
        assert (stats.tracked, stats.running, stats.finished) == (5, 0, 5)
        assert (stats.watch_breaker_trips, stats.watch_notifications_dropped) == (1, 2)


class TestProcessActions:
    """list, log, wait, kill, write, submit, close and unknown ids."""

    async def test_unknown_id(self, jails: Jails, tmp_path: Path, nursery: trio.Nursery) -> None:
        tools, ctx = make_tools(), make_ctx(jails, tmp_path, nursery=nursery)
        result = await process(tools, ctx, action="poll", session_id="proc_000000000000")
        assert result == {"status": "not_found", "error": "No process with ID proc_000000000000"}

    async def test_bad_action_and_missing_id(self, jails: Jails, tmp_path: Path, nursery: trio.Nursery) -> None:
        tools, ctx = make_tools(), make_ctx(jails, tmp_path, nursery=nursery)
        assert "Unknown action" in (await process(tools, ctx, action="explode"))["error"]
        assert "needs the process's session_id" in (await process(tools, ctx, action="log"))["error"]

    async def test_list(self, jails: Jails, tmp_path: Path, nursery: trio.Nursery) -> None:
        tools, ctx = make_tools(), make_ctx(jails, tmp_path, nursery=nursery)
        first = await call(tools, ctx, command="sleep 30", background=True)
        second = await call(tools, ctx, command="true", background=True)
        await process(tools, ctx, action="wait", session_id=second["session_id"], timeout=5)
        listed = await process(tools, ctx, action="list")
        assert listed["count"] == 2
        by_id = {p["session_id"]: p["status"] for p in listed["processes"]}
        assert by_id == {first["session_id"]: "running", second["session_id"]: "exited"}

    async def test_log_pages(self, jails: Jails, tmp_path: Path, nursery: trio.Nursery) -> None:
        tools, ctx = make_tools(), make_ctx(jails, tmp_path, nursery=nursery)
        started = await call(tools, ctx, command="seq 1 500", background=True)
        process_id = started["session_id"]
        await process(tools, ctx, action="wait", session_id=process_id, timeout=5)
        default = await process(tools, ctx, action="log", session_id=process_id)
        assert default["total_lines"] == 500
        assert default["output"].splitlines()[0] == "301" and default["output"].endswith("500")
        page = await process(tools, ctx, action="log", session_id=process_id, offset=10, limit=3)
        assert page["output"] == "11\n12\n13"
        assert page["showing"] == "lines 10-13 of 500"

    async def test_wait_is_clamped_to_the_terminal_timeout(
        self, jails: Jails, tmp_path: Path, nursery: trio.Nursery
    ) -> None:
        """A wait asking for more than terminal.timeout blocks that long only, and says so."""
        tools = make_tools(attrs.evolve(FAST, timeout=0.3))
        ctx = make_ctx(jails, tmp_path, nursery=nursery)
        started = await call(tools, ctx, command="echo begun; sleep 30", background=True)
        with trio.fail_after(3):
            waited = await process(tools, ctx, action="wait", session_id=started["session_id"], timeout=100)
            unasked = await process(tools, ctx, action="wait", session_id=started["session_id"])
        assert (waited["status"], unasked["status"]) == ("timeout", "timeout")
        assert "100s" in waited["timeout_note"] and "0.3s" in waited["timeout_note"]
        assert "terminal.timeout" in waited["timeout_note"]
        assert unasked["timeout_note"] == "Waited 0.3s; the process is still running."
        assert waited["output"] == "begun\n"

    async def test_wait_interrupted_emits_partial(self, jails: Jails, tmp_path: Path, nursery: trio.Nursery) -> None:
        tools, ctx = make_tools(), make_ctx(jails, tmp_path, nursery=nursery)
        started = await call(tools, ctx, command="sleep 30", background=True)
        with trio.move_on_after(0.2):
            await tools.process({"action": "wait", "session_id": started["session_id"]}, ctx)
        assert '"status": "interrupted"' in ctx.progress[-1]
        assert ctx.processes.get(started["session_id"]).status is ProcessStatus.RUNNING

    async def test_kill_stops_the_whole_group(self, jails: Jails, tmp_path: Path, nursery: trio.Nursery) -> None:
        tools, ctx = make_tools(), make_ctx(jails, tmp_path, nursery=nursery)
        pidfile = tmp_path / "gc.pid"
        started = await call(
            tools, ctx, command=f"( trap \"\" TERM; sleep 300 & {note_pid('$!', pidfile)}; wait )", background=True
        )
        await wait_for_file(pidfile)
        with trio.fail_after(5):
            killed = await process(tools, ctx, action="kill", session_id=started["session_id"])
        assert killed["status"] == "killed"
        assert await wait_dead(read_pid(pidfile))
        again = await process(tools, ctx, action="kill", session_id=started["session_id"])
        assert again["status"] == "already_exited"

    async def test_write_to_a_process_not_reading(self, jails: Jails, tmp_path: Path, nursery: trio.Nursery) -> None:
        tools = make_tools(TerminalConfig(background=BackgroundConfig(write_patience_seconds=0.3)))
        ctx = make_ctx(jails, tmp_path, nursery=nursery)
        started = await call(tools, ctx, command="sleep 30", background=True)
        with trio.fail_after(5):
            result = await process(tools, ctx, action="write", session_id=started["session_id"], data="x" * 1_000_000)
        assert "not reading its input" in result["error"]

    async def test_write_submit_close(self, jails: Jails, tmp_path: Path, nursery: trio.Nursery) -> None:
        tools, ctx = make_tools(), make_ctx(jails, tmp_path, nursery=nursery)
        command = "while read -r line; do echo \"got:$line\"; done; echo eof"
        started = await call(tools, ctx, command=command, background=True)
        process_id = started["session_id"]
        assert (await process(tools, ctx, action="write", session_id=process_id, data="par"))["bytes_written"] == 3
        assert (await process(tools, ctx, action="submit", session_id=process_id, data="tial"))["status"] == "ok"
        assert (await process(tools, ctx, action="close", session_id=process_id))["status"] == "ok"
        waited = await process(tools, ctx, action="wait", session_id=process_id, timeout=5)
        assert waited["output"] == "got:partial\neof\n"
        late = await process(tools, ctx, action="submit", session_id=process_id, data="x")
        assert "not accepting input" in late["error"]


class TestTable:
    """At most 64 tracked, finished ones evicted LRU, finished kept 30 minutes."""

    async def test_limit_evicts_least_recently_used_finished(self, jails: Jails, tmp_path: Path, autojump_clock: trio.testing.MockClock) -> None:
        table = ProcessTable(BackgroundConfig(max_tracked=3))
        records = [table.create(BackgroundSpec(jail=jails.jail(tmp_path), command=f"c{i}", cwd=str(tmp_path))) for i in range(3)]
        for record in records[:2]:
            record.status, record.finished_at = ProcessStatus.EXITED, trio.current_time()
        table.get(records[0].process_id)  # used recently: records[1] is now the LRU finished one
        table.create(BackgroundSpec(jail=jails.jail(tmp_path), command="c3", cwd=str(tmp_path)))
        ids = {info.process_id for info in table.list()}
        assert records[1].process_id not in ids and records[0].process_id in ids

    async def test_full_of_running_refuses(self, jails: Jails, tmp_path: Path) -> None:
        table = ProcessTable(BackgroundConfig(max_tracked=2))
        for i in range(2):
            table.create(BackgroundSpec(jail=jails.jail(tmp_path), command=f"c{i}", cwd=str(tmp_path)))
        with pytest.raises(ProcessLimitReached):
            table.create(BackgroundSpec(jail=jails.jail(tmp_path), command="more", cwd=str(tmp_path)))

    async def test_finished_expire_after_30_minutes(self, jails: Jails, tmp_path: Path, autojump_clock: trio.testing.MockClock) -> None:
        table = ProcessTable()
        record = table.create(BackgroundSpec(jail=jails.jail(tmp_path), command="c", cwd=str(tmp_path)))
        record.status, record.finished_at = ProcessStatus.EXITED, trio.current_time()
        await trio.sleep(1799)
        assert table.get(record.process_id) is record
        await trio.sleep(2)
        assert table.list() == []

    async def test_session_end_kills_processes(self, jails: Jails, tmp_path: Path) -> None:
        pidfile = tmp_path / "p.pid"
        table = ProcessTable()
        spec = BackgroundSpec(jail=jails.jail(tmp_path), command=f"sleep 300 & {note_pid('$!', pidfile)}; wait", cwd=str(tmp_path), kill_grace_seconds=0.2)
        record = table.create(spec)
        async with trio.open_nursery() as session_nursery:
            await session_nursery.start(run_background_process, spec, record, lambda note: None)
            await wait_for_file(pidfile)
            session_nursery.cancel_scope.cancel()
        assert record.status is ProcessStatus.KILLED and record.finished.is_set()
        assert await wait_dead(read_pid(pidfile))

    async def test_kill_all(self, jails: Jails, tmp_path: Path, nursery: trio.Nursery) -> None:
        tools, ctx = make_tools(), make_ctx(jails, tmp_path, nursery=nursery)
        ids = [(await call(tools, ctx, command="sleep 30", background=True))["session_id"] for _ in range(3)]
        assert ctx.processes.kill_all() == 3
        with trio.fail_after(5):
            for process_id in ids:
                await ctx.processes.get(process_id).wait_finished()
        assert {info.status for info in ctx.processes.list()} == {ProcessStatus.KILLED}
        assert ctx.processes.kill_all() == 0

    async def test_spawn_failure_reported(self, jails: Jails, tmp_path: Path) -> None:
        table = ProcessTable()
        spec = BackgroundSpec(jail=jails.jail(tmp_path), command="true", cwd=str(tmp_path / "missing"))
        record = table.create(spec)
        async with trio.open_nursery() as nursery:
            await nursery.start(run_background_process, spec, record, lambda note: None)
        assert record.status is ProcessStatus.FAILED and "Could not start" in (record.error or "")
