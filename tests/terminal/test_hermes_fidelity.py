"""The terminal and process tools answer as Hermes Agent's do, through the registry and dispatch."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio
import trio.testing

from config.terminal import TerminalConfig
from tests.jail.fixtures import Jails
from tests.terminal.helpers import FAST, make_ctx, note_pid, read_pid, wait_dead, wait_for_file
from tools.dispatch import dispatch
from tools.registry import ToolRegistry
from tools.results import ToolReply
from tools.terminal import exit_code_meaning, register_terminal_tools
from tools.testing import LocalToolContext


_TIMED_OUT = "Timed out: a time limit stopped the command (GNU timeout and this tool give 124)"


class _Tools:
    """A registry with terminal and process, and the context the calls run in."""

    def __init__(self, ctx: LocalToolContext, config: TerminalConfig = FAST) -> None:
        self.registry = ToolRegistry()
        register_terminal_tools(self.registry, config)
        self.ctx = ctx

    async def reply(self, tool: str, **args: Any) -> ToolReply:
        return await dispatch(self.registry, tool, args, self.ctx)

    async def call(self, tool: str, **args: Any) -> dict[str, Any]:
        return json.loads((await self.reply(tool, **args)).text)


class TestExitCodeMeaning:
    """A nonzero status that is an answer is explained; every nonzero status counts as a failed call."""

    async def test_grep_without_match(self, jails: Jails, tmp_path: Path) -> None:
        """grep's 1 means no matches; the reply keeps Hermes's text and is counted as unsuccessful."""
        (tmp_path / "notes.txt").write_text("alpha\n")
        tools = _Tools(make_ctx(jails, tmp_path))
        reply = await tools.reply("terminal", command="grep -q omega notes.txt")
        result = json.loads(reply.text)
        assert (result["exit_code"], result["exit_code_meaning"]) == (1, "No matches found (not an error)")
        assert result["error"] is None
        assert reply.ok and reply.unsuccessful and reply.counts_as_failure

    async def test_success_has_no_meaning_and_counts_as_success(self, jails: Jails, tmp_path: Path) -> None:
        """A zero status carries no exit_code_meaning and is not counted as a failure."""
        tools = _Tools(make_ctx(jails, tmp_path))
        reply = await tools.reply("terminal", command="echo fine")
        assert "exit_code_meaning" not in json.loads(reply.text)
        assert not reply.counts_as_failure

    @pytest.mark.parametrize(
        ("command", "code", "meaning"),
        [
            ("printf 'a\\n' > a; printf 'b\\n' > b; diff a b", 1, "Files differ"),
            ("test -f /no/such/file", 1, "Condition evaluated to false"),
            ("no_such_command_hx", 127, "Command not found"),
            ("(kill -TERM $BASHPID)", 143, "Killed by SIGTERM"),
            ("exit 3", 3, None),
        ],
    )
    async def test_real_statuses(
        self, jails: Jails, tmp_path: Path, command: str, code: int, meaning: str | None
    ) -> None:
        """Real commands give their statuses, explained where they are conventional."""
        tools = _Tools(make_ctx(jails, tmp_path))
        result = await tools.call("terminal", command=command)
        assert result["exit_code"] == code, result
        assert (result.get("exit_code_meaning") or "").startswith(meaning or "") and (
            meaning is not None or "exit_code_meaning" not in result
        )

    @pytest.mark.parametrize(
        ("command", "code", "meaning"),
        [
            ("cat log | FOO=1 /usr/bin/rg x", 1, "No matches found (not an error)"),
            ("grep x f && grep y f", 1, "No matches found (not an error)"),
            ("grep x f | sort", 1, None),
            ("curl -f https://h.invalid", 22, "The server answered with an HTTP error status (such as 404 or 500)"),
            ("[ -d x ]", 1, "Condition evaluated to false (expected, not an error)"),
            ("sleep 9", -9, "Killed by SIGKILL"),
            ("timeout 1 sleep 5", 124, _TIMED_OUT),
            ("grep x f", 0, None),
            ("grep x f", 2, None),
        ],
    )
    def test_which_command_decides(self, command: str, code: int, meaning: str | None) -> None:
        """The last command of a pipeline or chain decides, without its assignments and directory."""
        assert exit_code_meaning(command, code) == meaning

    async def test_own_timeout_explained(self, jails: Jails, tmp_path: Path) -> None:
        """A command stopped by the terminal's timeout reports 124 and says it timed out."""
        tools = _Tools(make_ctx(jails, tmp_path))
        reply = await tools.reply("terminal", command="echo started; sleep 30", timeout=1)
        result = json.loads(reply.text)
        assert (result["exit_code"], result["timed_out"]) == (124, True)
        assert result["exit_code_meaning"].startswith("Timed out") and result["output"].startswith("started")
        assert reply.unsuccessful


class TestForegroundTimeout:
    """As Hermes: the 600s cap applies to a timeout the model asks for, not to terminal.timeout."""

    async def test_cap(self, jails: Jails, tmp_path: Path) -> None:
        """A default of 900s runs commands; asking for 700s is refused with the advice to go background."""
        tools = _Tools(make_ctx(jails, tmp_path), attrs.evolve(FAST, timeout=900))
        assert (await tools.call("terminal", command="echo ok"))["output"] == "ok"
        refused = await tools.reply("terminal", command="echo ok", timeout=700)
        assert not refused.ok and "notify_on_complete=true" in (refused.error or "")


class TestBackgroundHint:
    """A background start with nothing to tell the model when it ends carries Hermes's hint."""

    async def test_silent_start_has_the_hint(self, jails: Jails, tmp_path: Path, nursery: trio.Nursery) -> None:
        """Neither notify_on_complete nor watch_patterns: the result says the process runs silently."""
        tools = _Tools(make_ctx(jails, tmp_path, nursery=nursery))
        started = await tools.call("terminal", command="sleep 30", background=True)
        assert "notify_on_complete=true" in started["hint"] and "process(action='poll')" in started["hint"]
        assert (started["output"], started["exit_code"], started["error"]) == ("Background process started", 0, None)

    @pytest.mark.parametrize("flags", [{"notify_on_complete": True}, {"watch_patterns": ["ready"]}])
    async def test_watched_start_has_none(
        self, jails: Jails, tmp_path: Path, nursery: trio.Nursery, flags: dict[str, Any]
    ) -> None:
        """A process that will report back (at exit or on a pattern) gets no hint."""
        tools = _Tools(make_ctx(jails, tmp_path, nursery=nursery))
        started = await tools.call("terminal", command="sleep 30", background=True, **flags)
        assert "hint" not in started and started["session_id"].startswith("proc_")


class TestProcessWait:
    """process(wait) blocks at most terminal.timeout, through dispatch, and says when it cut the wait."""

    async def test_clamped(self, jails: Jails, tmp_path: Path, nursery: trio.Nursery) -> None:
        """Asking 300s of a 0.4s terminal timeout returns after 0.4s with a timeout_note."""
        tools = _Tools(make_ctx(jails, tmp_path, nursery=nursery), attrs.evolve(FAST, timeout=0.4))
        started = await tools.call("terminal", command="sleep 30", background=True)
        with trio.fail_after(3):
            waited = await tools.call("process", action="wait", session_id=started["session_id"], timeout=300)
        assert waited["status"] == "timeout"
        assert "300s" in waited["timeout_note"] and "0.4s" in waited["timeout_note"]

    async def test_within_the_limit_no_note(self, jails: Jails, tmp_path: Path, nursery: trio.Nursery) -> None:
        """A wait that ends with the process says nothing of clamping."""
        tools = _Tools(make_ctx(jails, tmp_path, nursery=nursery))
        started = await tools.call("terminal", command="echo done", background=True)
        with trio.fail_after(5):
            waited = await tools.call("process", action="wait", session_id=started["session_id"], timeout=5)
        assert (waited["status"], waited["exit_code"], waited["output"]) == ("exited", 0, "done\n")
        assert "timeout_note" not in waited


class TestProcessList:
    """process(list) shows each process with the end of its output, as Hermes's does."""

    async def test_output_preview(self, jails: Jails, tmp_path: Path, nursery: trio.Nursery) -> None:
        """The preview is the last 200 characters of the output."""
        tools = _Tools(make_ctx(jails, tmp_path, nursery=nursery))
        started = await tools.call("terminal", command="printf 'x%.0s' $(seq 250); echo END", background=True)
        await tools.call("process", action="wait", session_id=started["session_id"], timeout=5)
        listed = await tools.call("process", action="list")
        (entry,) = listed["processes"]
        assert entry["session_id"] == started["session_id"]
        assert entry["output_preview"] == "x" * 196 + "END\n"


class TestExitSeen:
    """As Hermes's "completion consumed": an exit the model saw through process(wait) is not notified again."""

    async def test_wait_consumes_the_notification(self, jails: Jails, tmp_path: Path, nursery: trio.Nursery) -> None:
        """A wait blocked when the process exits returns it; no completion notification follows."""
        ctx = make_ctx(jails, tmp_path, nursery=nursery)
        tools = _Tools(ctx)
        started = await tools.call("terminal", command="sleep 0.3; echo done", background=True, notify_on_complete=True)
        with trio.fail_after(5):
            waited = await tools.call("process", action="wait", session_id=started["session_id"], timeout=5)
        assert waited["status"] == "exited"
        await trio.testing.wait_all_tasks_blocked()
        assert ctx.notifications == []

    async def test_unwatched_exit_is_notified(self, jails: Jails, tmp_path: Path, nursery: trio.Nursery) -> None:
        """Without a wait, the exit is notified once."""
        ctx = make_ctx(jails, tmp_path, nursery=nursery)
        tools = _Tools(ctx)
        started = await tools.call("terminal", command="echo done", background=True, notify_on_complete=True)
        with trio.fail_after(5):
            await ctx.processes.get(started["session_id"]).wait_finished()
        assert [(n.kind, n.exit_code) for n in ctx.notifications] == [("completed", 0)]


class TestPty:
    """As in Hermes Agent, pty=true gives a background process a 30x120 pseudo-terminal made inside the session's
    jail; a foreground command runs on pipes whatever pty says."""

    CHECK = "if [ -t 0 ] && [ -t 1 ]; then echo terminal; stty size; else echo plain; fi"

    async def test_a_background_process_sees_a_30_by_120_terminal(
        self, jails: Jails, tmp_path: Path, nursery: trio.Nursery
    ) -> None:
        """Its stdin and stdout are a terminal of Hermes's size."""
        tools = _Tools(make_ctx(jails, tmp_path, nursery=nursery))
        started = await tools.call("terminal", command=self.CHECK, background=True, pty=True)
        with trio.fail_after(5):
            waited = await tools.call("process", action="wait", session_id=started["session_id"], timeout=5)
        assert (waited["exit_code"], waited["output"].strip()) == (0, "terminal\n30 120")

    async def test_a_foreground_command_runs_without_one(self, jails: Jails, tmp_path: Path) -> None:
        """pty=true in the foreground changes nothing, as in Hermes: no terminal and no note."""
        tools = _Tools(make_ctx(jails, tmp_path))
        with_pty = await tools.call("terminal", command=self.CHECK, pty=True)
        assert (with_pty["exit_code"], with_pty["output"]) == (0, "plain")
        assert "pty_note" not in with_pty

    async def test_background_prompt_answered_with_submit(
        self, jails: Jails, tmp_path: Path, nursery: trio.Nursery
    ) -> None:
        """A background pty process reads a line submitted through process and sees a terminal."""
        tools = _Tools(make_ctx(jails, tmp_path, nursery=nursery))
        script = "[ -t 0 ] && echo on-a-tty; read -r -p 'name? ' answer; echo \"got:$answer\""
        started = await tools.call("terminal", command=script, background=True, pty=True, notify_on_complete=True)
        process_id = started["session_id"]
        with trio.fail_after(5):
            while "name?" not in (await tools.call("process", action="poll", session_id=process_id))["output_preview"]:
                await trio.sleep(0.02)
        await tools.call("process", action="submit", session_id=process_id, data="ada")
        with trio.fail_after(5):
            waited = await tools.call("process", action="wait", session_id=process_id, timeout=5)
        assert waited["exit_code"] == 0
        assert "on-a-tty" in waited["output"] and "got:ada" in waited["output"]

    async def test_background_close_ends_input(self, jails: Jails, tmp_path: Path, nursery: trio.Nursery) -> None:
        """process(close) reaches a pty process as end of file."""
        tools = _Tools(make_ctx(jails, tmp_path, nursery=nursery))
        started = await tools.call("terminal", command="cat > /dev/null; echo eof-seen", background=True, pty=True)
        closed = await tools.call("process", action="close", session_id=started["session_id"])
        assert (closed["status"], closed["message"]) == ("ok", "end of file sent (Ctrl-D on its terminal)")
        with trio.fail_after(5):
            waited = await tools.call("process", action="wait", session_id=started["session_id"], timeout=5)
        assert (waited["exit_code"], waited["output"].strip()) == (0, "eof-seen")
        again = await tools.reply("process", action="close", session_id=started["session_id"])
        assert not again.ok and json.loads(again.text)["status"] == "already_exited"

    async def test_background_kill_stops_the_command(self, jails: Jails, tmp_path: Path, nursery: trio.Nursery) -> None:
        """Killing a pty process stops the command behind the relay, even one that ignores SIGTERM."""
        tools = _Tools(make_ctx(jails, tmp_path, nursery=nursery))
        pidfile = tmp_path / "pty.pid"
        command = f"trap '' TERM; {note_pid('$$', pidfile)}; sleep 300"
        started = await tools.call("terminal", command=command, background=True, pty=True)
        await wait_for_file(pidfile)
        with trio.fail_after(5):
            killed = await tools.call("process", action="kill", session_id=started["session_id"])
        assert killed["status"] == "killed"
        assert await wait_dead(read_pid(pidfile))

    async def test_pipe_only_command_runs_without(self, jails: Jails, tmp_path: Path, nursery: trio.Nursery) -> None:
        """A background command that needs piped stdin (gh auth login --with-token) runs without a pty, with a note."""
        tools = _Tools(make_ctx(jails, tmp_path, nursery=nursery))
        command = "gh auth login --with-token 2>/dev/null; [ -t 0 ] || echo piped"
        started = await tools.call("terminal", command=command, background=True, pty=True)
        assert "pty was not used" in started["pty_note"]
        await tools.call("process", action="close", session_id=started["session_id"])
        with trio.fail_after(5):
            waited = await tools.call("process", action="wait", session_id=started["session_id"], timeout=5)
        assert waited["output"].strip().endswith("piped")


class TestShellEnvironment:
    """The shell, foreground and background, loses Hermes's named secrets but keeps the desktop's sockets."""

    KEPT = {"XAUTHORITY": "/run/user/1/xauth", "DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/user/1/bus"}
    DROPPED = {"OPENAI_BASE_URL": "https://llm.example", "TELEGRAM_HOME_CHANNEL": "42", "HX_FRESH_TOKEN": "t0k"}
    PRINT = (
        "for n in XAUTHORITY DBUS_SESSION_BUS_ADDRESS OPENAI_BASE_URL TELEGRAM_HOME_CHANNEL HX_FRESH_TOKEN HX_MINE_KEY;"
        " "
        'do echo "$n ${!n-unset}"; done'
    )

    def _expected(self, *, mine: str) -> str:
        # "NAME value", not NAME=value: the redaction would hide a value given to a *_TOKEN name.
        lines = [f"{name} {value}" for name, value in self.KEPT.items()]
        lines += [f"{name} unset" for name in self.DROPPED] + [f"HX_MINE_KEY {mine}"]
        return "\n".join(lines)

    @pytest.fixture(autouse=True)
    def _user_environment(self, monkeypatch: pytest.MonkeyPatch) -> None:
        for name, value in {**self.KEPT, **self.DROPPED, "HX_MINE_KEY": "passed"}.items():
            monkeypatch.setenv(name, value)

    async def test_foreground(self, jails: Jails, tmp_path: Path) -> None:
        """A foreground command sees the kept names, not the dropped ones; env_passthrough still works."""
        tools = _Tools(make_ctx(jails, tmp_path), attrs.evolve(FAST, env_passthrough=("HX_MINE_KEY",)))
        result = await tools.call("terminal", command=self.PRINT)
        assert result["output"] == self._expected(mine="passed")

    async def test_background(self, jails: Jails, tmp_path: Path, nursery: trio.Nursery) -> None:
        """A background process gets the same environment (here without passthrough)."""
        tools = _Tools(make_ctx(jails, tmp_path, nursery=nursery))
        started = await tools.call("terminal", command=self.PRINT, background=True)
        with trio.fail_after(5):
            waited = await tools.call("process", action="wait", session_id=started["session_id"], timeout=5)
        assert waited["output"].strip() == self._expected(mine="unset")

    async def test_agent_socket_kept_where_the_jail_allows(
        self, jails: Jails, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """SSH_AUTH_SOCK survives the filter; in a jail, the jail decides (here: no agent was chosen)."""
        monkeypatch.setenv("SSH_AUTH_SOCK", str(tmp_path / "agent.sock"))
        tools = _Tools(make_ctx(jails, tmp_path))
        result = await tools.call("terminal", command="echo ${SSH_AUTH_SOCK-unset}")
        assert result["output"] == ("unset" if jails.jailed else str(tmp_path / "agent.sock"))
