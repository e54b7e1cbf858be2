"""Foreground terminal commands: real bash processes, real process groups."""

from __future__ import annotations

from tests.jail.fixtures import Jails

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import trio

from config.terminal import TerminalConfig
from tests.terminal.helpers import FAST, call, make_ctx, make_tools, note_pid, read_pid, wait_dead, wait_for_file
from tools.terminal import _tool as terminal_tool
from tools.terminal import (
    EXIT_INTERRUPTED,
    EXIT_TIMEOUT,
    ForegroundRun,
    RunAlreadyStarted,
    build_shell_env,
    run_foreground,
)


class TestShellStatePersists:
    """cd and export in one call are seen by the next call of the same session."""

    async def test_cd_then_pwd(self, jails: Jails, tmp_path: Path) -> None:
        tools, ctx = make_tools(), make_ctx(jails, tmp_path)
        (tmp_path / "sub").mkdir()
        first = await call(tools, ctx, command="cd sub")
        assert first["exit_code"] == 0
        second = await call(tools, ctx, command="pwd")
        assert second["output"] == str(tmp_path / "sub")
        assert ctx.shell.cwd == str(tmp_path / "sub")

    async def test_cd_into_proc(self, jails: Jails, tmp_path: Path) -> None:
        """/proc, refused to the file tools, is the session's own to the terminal: the next command starts there."""
        tools, ctx = make_tools(), make_ctx(jails, tmp_path)
        await call(tools, ctx, command="cd /proc")
        second = await call(tools, ctx, command="pwd && test -r self/mountinfo && echo readable")
        assert (0, "/proc\nreadable") == (second["exit_code"], second["output"])

    async def test_export_then_echo(self, jails: Jails, tmp_path: Path) -> None:
        tools, ctx = make_tools(), make_ctx(jails, tmp_path)
        await call(tools, ctx, command="export GREETING='hello world'; MULTI=$'a\\nb'; export MULTI")
        result = await call(tools, ctx, command='echo "$GREETING"; printf "%s" "$MULTI"')
        assert result["output"] == "hello world\na\nb"

    async def test_state_saved_even_when_command_exits(self, jails: Jails, tmp_path: Path) -> None:
        tools, ctx = make_tools(), make_ctx(jails, tmp_path)
        result = await call(tools, ctx, command="cd / && export LEFT=1 && exit 7")
        assert result["exit_code"] == 7
        assert ctx.shell.cwd == "/"
        assert ctx.shell.env["LEFT"] == "1"

    async def test_large_environment_survives(self, jails: Jails, tmp_path: Path) -> None:
        """More than a pipe holds (64 KB): the state is read while the shell writes it."""
        tools, ctx = make_tools(), make_ctx(jails, tmp_path)
        await call(tools, ctx, command="export BIG=$(head -c 100000 /dev/zero | tr '\\0' x)")
        assert len(ctx.shell.env["BIG"]) == 100_000
        result = await call(tools, ctx, command='printf "%s" "${#BIG}"')
        assert result["output"] == "100000"

    async def test_scripts_own_descriptors_do_not_disturb_it(self, jails: Jails, tmp_path: Path) -> None:
        tools, ctx = make_tools(), make_ctx(jails, tmp_path)
        (tmp_path / "sub").mkdir()
        await call(tools, ctx, command="for fd in 3 4 5 6 7 8 9; do eval \"exec $fd>/dev/null\"; done; cd sub")
        assert ctx.shell.cwd == str(tmp_path / "sub")

    async def test_leftover_child_holding_the_pipe_does_not_delay_the_answer(self, jails: Jails, tmp_path: Path) -> None:
        tools, ctx = make_tools(), make_ctx(jails, tmp_path)
        (tmp_path / "sub").mkdir()
        with trio.fail_after(10):
            await call(tools, ctx, command="cd sub; sleep 60 >/dev/null 2>&1 &")
        assert ctx.shell.cwd == str(tmp_path / "sub")

    async def test_functions_named_like_the_dumps_builtins_change_nothing(self, jails: Jails, tmp_path: Path) -> None:
        tools, ctx = make_tools(), make_ctx(jails, tmp_path)
        await call(tools, ctx, command="export KEPT=1")
        await call(tools, ctx, command="export() { :; }; printf() { :; }; builtin export ADDED=2; cd /")
        assert (ctx.shell.cwd, ctx.shell.env["KEPT"], ctx.shell.env["ADDED"]) == ("/", "1", "2")

    async def test_garbage_written_to_the_state_pipe_keeps_the_state(self, jails: Jails, tmp_path: Path) -> None:
        tools, ctx = make_tools(), make_ctx(jails, tmp_path)
        await call(tools, ctx, command="export KEPT=1")
        result = await call(tools, ctx, command="cd /; export LOST=1; echo 'not what bash writes' >&$__hermes_state")
        assert result["exit_code"] == 0
        assert (ctx.shell.cwd, ctx.shell.env.get("LOST"), ctx.shell.env["KEPT"]) == (str(tmp_path), None, "1")

    async def test_a_flooded_state_pipe_is_bounded_and_dropped(
        self, jails: Jails, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
    ) -> None:
        """A command writing more than the limit to the pipe costs no more memory than the limit, and the
        session keeps the state it had."""
        monkeypatch.setattr("tools.terminal._foreground.STATE_LIMIT_BYTES", 100_000)
        tools, ctx = make_tools(), make_ctx(jails, tmp_path)
        result = await call(tools, ctx, command="cd /; head -c 1000000 /dev/zero >&$__hermes_state; echo done")
        assert (result["output"], result["exit_code"]) == ("done", 0)
        assert ctx.shell.cwd == str(tmp_path)
        assert "state pipe got more than 100000 bytes" in caplog.text

    def test_a_low_descriptor_limit_still_gives_a_state_pipe(self) -> None:
        """Under a descriptor limit below the pipe's usual number (200), the pipe keeps a low one."""
        code = (
            "import resource; resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64)); "
            "from tools.terminal._foreground import _StatePipe; pipe = _StatePipe(); print(3 <= pipe.write_fd < 64)"
        )
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
        assert done.stdout == "True\n"

    async def test_workdir_runs_there_without_moving_the_session(self, jails: Jails, tmp_path: Path) -> None:
        tools, ctx = make_tools(), make_ctx(jails, tmp_path)
        (tmp_path / "w").mkdir()
        result = await call(tools, ctx, command="pwd", workdir="w")
        assert result["output"] == str(tmp_path / "w")
        assert ctx.shell.cwd == str(tmp_path)

    async def test_removed_cwd_moves_up(self, jails: Jails, tmp_path: Path) -> None:
        tools, ctx = make_tools(), make_ctx(jails, tmp_path)
        (tmp_path / "a" / "b").mkdir(parents=True)
        await call(tools, ctx, command="cd a/b")
        (tmp_path / "a" / "b").rmdir()
        (tmp_path / "a").rmdir()
        result = await call(tools, ctx, command="pwd")
        assert result["output"] == str(tmp_path)
        assert "no longer exists" in result["note"]
        assert ctx.shell.cwd == str(tmp_path)

    async def test_an_existing_cwd_takes_no_worker_thread_trip(
        self, jails: Jails, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The spawn looks at the directory on its own thread: the handler asks a worker thread nothing."""
        looked: list[str] = []
        nearest = terminal_tool._nearest_directory
        monkeypatch.setattr(terminal_tool, "_nearest_directory", lambda path, host: looked.append(path) or nearest(path, host))
        tools, ctx = make_tools(), make_ctx(jails, tmp_path)
        result = await call(tools, ctx, command="pwd")
        assert (result["output"], looked) == (str(tmp_path), [])

    async def test_missing_workdir_is_an_error(self, jails: Jails, tmp_path: Path) -> None:
        tools, ctx = make_tools(), make_ctx(jails, tmp_path)
        result = await call(tools, ctx, command="pwd", workdir="nope")
        assert "does not exist" in result["error"]

    async def test_positional_parameters_are_empty(self, jails: Jails, tmp_path: Path) -> None:
        tools, ctx = make_tools(), make_ctx(jails, tmp_path)
        result = await call(tools, ctx, command='echo "[$#][$1]"')
        assert result["output"] == "[0][]"


class TestEnvironment:
    """The shell starts without credential-looking variables unless passed through."""

    def test_secrets_stripped_and_passthrough_kept(self) -> None:
        env = build_shell_env(
            {"PATH": "/bin", "OPENAI_API_KEY": "sk-x", "GITHUB_TOKEN": "t", "MY_TOKEN": "keep", "SHLVL": "3"},
            ("MY_TOKEN",),
        )
        assert env == {"PATH": "/bin", "MY_TOKEN": "keep"}

    async def test_key_in_daemon_env_not_visible(self, jails: Jails, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("HERMES_TEST_API_KEY", "sk-secretsecretsecret")
        tools, ctx = make_tools(), make_ctx(jails, tmp_path)
        result = await call(tools, ctx, command='echo "[${HERMES_TEST_API_KEY:-unset}]"')
        assert result["output"] == "[unset]"


class TestOutput:
    """Output is merged, ANSI-stripped and capped with head and tail kept."""

    async def test_exit_code_and_stderr_merged(self, jails: Jails, tmp_path: Path) -> None:
        tools, ctx = make_tools(), make_ctx(jails, tmp_path)
        result = await call(tools, ctx, command="echo out; echo err >&2; exit 3")
        assert result["exit_code"] == 3
        assert result["output"] == "out\nerr"
        assert result["error"] is None

    async def test_ansi_and_progress_cleaned(self, jails: Jails, tmp_path: Path) -> None:
        tools, ctx = make_tools(), make_ctx(jails, tmp_path)
        result = await call(tools, ctx, command=r"printf '\033[1;31mred\033[0m\n10%%\r50%%\r100%%\n'")
        assert result["output"] == "red\n100%"

    async def test_large_output_keeps_head_and_tail(self, jails: Jails, tmp_path: Path) -> None:
        tools = make_tools(TerminalConfig(max_output_bytes=2000, kill_grace_seconds=0.3))
        ctx = make_ctx(jails, tmp_path)
        result = await call(tools, ctx, command="echo FIRST; seq 1 20000; echo LAST")
        output = result["output"]
        assert output.startswith("FIRST\n1\n")
        assert output.endswith("20000\nLAST")
        assert "bytes of output omitted" in output
        assert result["truncated"] is True
        assert len(output) < 2200

    async def test_live_output_reaches_progress(self, jails: Jails, tmp_path: Path) -> None:
        tools = make_tools(TerminalConfig(progress_interval_seconds=0, kill_grace_seconds=0.3))
        ctx = make_ctx(jails, tmp_path)
        await call(tools, ctx, command="echo first; sleep 0.3; echo token=ghp_abcdefghijklmnopqrstuvwxyz0123456789")
        assert ctx.progress == ["first", "token=[REDACTED]"]

    async def test_progress_rate_limited(self, jails: Jails, tmp_path: Path) -> None:
        tools, ctx = make_tools(TerminalConfig(progress_interval_seconds=60)), make_ctx(jails, tmp_path)
        await call(tools, ctx, command="echo one; sleep 0.2; echo two")
        assert ctx.progress == ["one"]

    async def test_stdin_is_devnull(self, jails: Jails, tmp_path: Path) -> None:
        tools, ctx = make_tools(), make_ctx(jails, tmp_path)
        with trio.fail_after(5):
            result = await call(tools, ctx, command="cat; echo done")
        assert result["output"] == "done"


class TestTimeouts:
    """Timeouts stop the whole process group and say so; over-long ones are refused."""

    async def test_foreground_over_600_refused(self, jails: Jails, tmp_path: Path) -> None:
        tools, ctx = make_tools(), make_ctx(jails, tmp_path)
        result = await call(tools, ctx, command="true", timeout=601)
        assert "background=true" in result["error"]

    async def test_timeout_kills_grandchild(self, jails: Jails, tmp_path: Path) -> None:
        tools, ctx = make_tools(), make_ctx(jails, tmp_path)
        pidfile = tmp_path / "grandchild.pid"
        command = f"echo started; ( trap \"\" TERM; sleep 300 & {note_pid('$!', pidfile)}; wait )"
        result = await call(tools, ctx, command=command, timeout=1)
        assert result["exit_code"] == EXIT_TIMEOUT
        assert result["timed_out"] is True
        assert result["output"].startswith("started\n")
        assert "timed out after 1s" in result["output"]
        assert await wait_dead(read_pid(pidfile))

    async def test_detached_children_are_stopped_too(self, jails: Jails, tmp_path: Path) -> None:
        tools, ctx = make_tools(), make_ctx(jails, tmp_path)
        pidfile = tmp_path / "nohup.pid"
        with trio.fail_after(5):
            result = await call(tools, ctx, command=f"nohup sleep 300 >/dev/null 2>&1 & {note_pid('$!', pidfile)}")
        assert result["exit_code"] == 0
        # Leftovers end with the command's PID namespace when the shell exits, in every mode (full-access too).
        assert await wait_dead(read_pid(pidfile))

    async def test_leftover_background_children_are_stopped(self, jails: Jails, tmp_path: Path) -> None:
        tools, ctx = make_tools(), make_ctx(jails, tmp_path)
        pidfile = tmp_path / "left.pid"
        with trio.fail_after(5):
            result = await call(tools, ctx, command=f"sleep 300 & {note_pid('$!', pidfile)}; echo main done")
        assert result["output"] == "main done"
        assert await wait_dead(read_pid(pidfile))


class TestCancellation:
    """A cancelled command leaves no process behind and hands back its output so far."""

    async def test_cancel_while_waiting_for_approval_runs_nothing(self, jails: Jails, tmp_path: Path) -> None:
        asked = trio.Event()

        async def slow_user(request: object) -> str:
            asked.set()
            await trio.sleep_forever()
            return "once"

        tools, ctx = make_tools(), make_ctx(jails, tmp_path, approver=slow_user)
        (tmp_path / "victim").write_text("x")
        async with trio.open_nursery() as nursery:
            nursery.start_soon(tools.terminal, {"command": "rm -r victim"}, ctx)
            await asked.wait()
            nursery.cancel_scope.cancel()
        assert (tmp_path / "victim").exists()

    async def test_cancel_leaves_no_descriptor(self, jails: Jails, tmp_path: Path) -> None:
        tools, ctx = make_tools(), make_ctx(jails, tmp_path)
        await call(tools, ctx, command="true")
        before = _open_descriptors()
        with trio.move_on_after(0.3):
            await tools.terminal({"command": "sleep 30"}, ctx)
        assert _open_descriptors() == before

    async def test_cancel_kills_tree_and_emits_partial(self, jails: Jails, tmp_path: Path) -> None:
        tools, ctx = make_tools(), make_ctx(jails, tmp_path)
        pidfile = tmp_path / "gc.pid"
        command = f"echo before; ( sleep 300 & {note_pid('$!', pidfile)}; wait )"
        async with trio.open_nursery() as nursery:
            nursery.start_soon(tools.terminal, {"command": command}, ctx)
            await wait_for_file(pidfile)
            nursery.cancel_scope.cancel()
        assert await wait_dead(read_pid(pidfile))
        assert ctx.progress[-1] == "before\n[Command interrupted]"

    async def test_partial_result_after_cancel(self, jails: Jails, tmp_path: Path) -> None:
        pidfile = tmp_path / "leader.pid"
        run = ForegroundRun(
            f"echo one; {note_pid('$$', pidfile)}; sleep 300", cwd=str(tmp_path), env=build_shell_env(os.environ), config=FAST,
            jail=jails.jail(tmp_path),
        )
        async with trio.open_nursery() as nursery:
            nursery.start_soon(run.run)
            await wait_for_file(pidfile)
            nursery.cancel_scope.cancel()
        partial = run.partial_result("interrupted")
        assert partial.exit_code == EXIT_INTERRUPTED
        assert partial.output == "one\n[Command interrupted]"
        assert await wait_dead(read_pid(pidfile))

    async def test_output_still_in_the_pipe_is_kept(self, jails: Jails, tmp_path: Path) -> None:
        """Cancelled before its reader took what the command printed: the words are read at the stop."""
        go, printed = tmp_path / "go", tmp_path / "printed"
        run = ForegroundRun(
            f"until [ -e {go} ]; do sleep 0.01; done; echo last-words; touch {printed}; sleep 300",
            cwd=str(tmp_path), env=build_shell_env(os.environ), config=FAST, jail=jails.jail(tmp_path),
        )
        async with trio.open_nursery() as nursery:
            nursery.start_soon(run.run)
            while run.pid is None:
                await trio.sleep(0.01)
            # The event loop is held (blocking waits) from before the command prints until it has, so its
            # reader cannot run before the cancel below: the words are still in the pipe when it comes.
            go.touch()
            deadline = time.monotonic() + 10
            while not printed.exists():
                assert time.monotonic() < deadline, "the command never printed"
                time.sleep(0.005)
            nursery.cancel_scope.cancel()
        assert run.partial_result("interrupted").output == "last-words\n[Command interrupted]"

    async def test_run_is_single_use(self, jails: Jails, tmp_path: Path) -> None:
        run = ForegroundRun(jail=jails.jail(tmp_path), command="true", cwd=str(tmp_path), env=build_shell_env(os.environ), config=FAST)
        await run.run()
        with pytest.raises(RunAlreadyStarted):
            await run.run()

    async def test_state_needs_no_file_and_leaves_no_descriptor(self, jails: Jails, tmp_path: Path) -> None:
        # One session: its resident shell (started by the first command) holds its socket between commands.
        jail = jails.jail(tmp_path)
        await run_foreground(jail=jail, command="true", cwd=str(tmp_path), env=build_shell_env(os.environ), config=FAST)
        before, files = _open_descriptors(), sorted(tmp_path.iterdir())
        result = await run_foreground(jail=jail, command="export A=1", cwd=str(tmp_path), env=build_shell_env(os.environ), config=FAST)
        assert result.shell is not None and result.shell.env["A"] == "1"
        assert (_open_descriptors(), sorted(tmp_path.iterdir())) == (before, files)

    async def test_bad_shell_is_reported(self, jails: Jails, tmp_path: Path) -> None:
        config = TerminalConfig(shell="/nonexistent/shell")
        result = await run_foreground(jail=jails.jail(tmp_path), command="true", cwd=str(tmp_path), env={}, config=config)
        assert result.exit_code == 127
        assert "/nonexistent/shell" in (result.error or "")


REPO = Path(__file__).resolve().parents[2]


def _open_descriptors() -> list[str]:
    """This process's open descriptors."""
    return sorted(os.listdir("/proc/self/fd"))
