"""Whole execute_code runs: a real child process, the real stub, the real RPC socket and tools."""

from __future__ import annotations

import json
import os
import re
import textwrap
from typing import Any

import pytest
import trio

from actors.sandbox import Sandbox, SandboxResult, SandboxState, SandboxStatus, SandboxToolCall
from config.sandbox import CodeExecutionConfig
from tests.jail.fixtures import policy_for
from tests.sandbox.helpers import ToolBench, pid_running
from tools.errors import ToolError
from tools.jail import SandboxMode, SessionJail

FAST = CodeExecutionConfig(timeout=20, kill_grace_seconds=0.5, progress_interval_seconds=60)


def _sandbox(code: str, bench: ToolBench, short_dir: str, **options: Any) -> Sandbox:
    config = options.pop("config", FAST)
    return Sandbox(
        textwrap.dedent(code),
        call_tool=bench.call_tool,
        allowed_tools=options.pop("allowed", bench.enabled),
        config=config,
        gate=bench.gate,
        base_dir=short_dir,
        jail=options.pop("jail", bench.ctx.jail),
        **options,
    )


async def _run(code: str, bench: ToolBench, short_dir: str, **options: Any) -> SandboxResult:
    result = await _sandbox(code, bench, short_dir, **options).run()
    assert os.listdir(short_dir) == [], "the sandbox directory was left behind"
    return result


class TestSuccess:
    """A script's tool calls come back as parsed JSON and only its prints reach the result."""

    async def test_tools_return_dicts(self, bench: ToolBench, short_dir: str) -> None:
        bench.delay = 0
        records: list[SandboxToolCall] = []
        progress: list[str] = []
        result = await _run(
            """
            from hermes_tools import read_file, terminal, web_extract
            page = web_extract(["http://a"])
            print(page["results"][0]["content"])
            print(read_file("notes.txt")["content"])
            print(terminal("echo hi")["output"])
            """,
            bench, short_dir, on_tool_call=records.append, on_progress=progress.append,
        )  # fmt: skip
        assert result.status is SandboxStatus.SUCCESS and result.exit_code == 0
        assert result.output == "page http://a\ncontents of notes.txt\necho hi\n"
        assert result.tool_calls_made == 3
        assert [r.tool for r in records] == ["web_extract", "read_file", "terminal"] and all(r.ok for r in records)
        assert progress == ["execute_code: 1 tool call, 0 s"]  # the next two came too soon after it
        payload = json.loads(result.tool_result().render())
        assert payload["status"] == "success" and payload["tool_calls_made"] == 3

    async def test_progress_is_throttled(self, bench: ToolBench, short_dir: str) -> None:
        bench.delay = 0.3
        progress: list[str] = []
        await _run(
            "from hermes_tools import terminal, read_file\nfor i in range(20):\n    terminal(str(i))\nread_file('x')",
            bench, short_dir, on_progress=progress.append,
        )  # fmt: skip
        # The counts are the throttle's; the seconds are the real time the script took (more on a busy machine).
        assert [re.sub(r", \d+ s$", ", N s", line) for line in progress] == [
            "execute_code: 1 tool call, N s", "execute_code: 21 tool calls, N s",
        ]

    async def test_helpers(self, bench: ToolBench, short_dir: str) -> None:
        result = await _run(
            """
            from hermes_tools import json_parse, shell_quote, retry
            attempts = []
            def flaky():
                attempts.append(1)
                if len(attempts) < 3:
                    raise ValueError("not yet")
                return "done"
            print(retry(flaky, delay=0.01), len(attempts))
            print(json_parse('{"a": "line\\nbreak"}')["a"].split())
            print(shell_quote("it's"))
            """,
            bench, short_dir,
        )  # fmt: skip
        assert result.output.splitlines() == ["done 3", "['line', 'break']", "'it'\"'\"'s'"]

    async def test_empty_code(self, bench: ToolBench, short_dir: str) -> None:
        result = await _run("   \n", bench, short_dir)
        with pytest.raises(ToolError, match=r"^No code provided\.$"):
            result.tool_result()

    async def test_output_is_redacted(self, bench: ToolBench, short_dir: str) -> None:
        result = await _run("print('key: sk-proj-abcdefghijklmnopqrstuvwxyz0123456789')", bench, short_dir)
        assert result.output == "key: [REDACTED]\n"


class TestErrorTable:
    """Every row of the seeds' error-handling table."""

    async def test_syntax_error(self, bench: ToolBench, short_dir: str) -> None:
        result = await _run("print('unclosed", bench, short_dir)
        assert result.status is SandboxStatus.ERROR and result.exit_code == 1
        assert "--- stderr ---" in result.output and "SyntaxError" in result.output

    async def test_runtime_exception(self, bench: ToolBench, short_dir: str) -> None:
        result = await _run("print('before')\n1 / 0", bench, short_dir)
        assert result.status is SandboxStatus.ERROR
        before, stderr = result.output.split("--- stderr ---\n")
        assert before == "before\n"
        assert stderr.startswith("Traceback") and "ZeroDivisionError: division by zero" in stderr

    async def test_tool_failure_is_data(self, bench: ToolBench, short_dir: str) -> None:
        records: list[SandboxToolCall] = []
        result = await _run(
            """
            from hermes_tools import search_files, patch
            print(search_files("needle"))
            print(patch("f", "a", "b"))
            print("carried on")
            """,
            bench, short_dir, on_tool_call=records.append,
        )  # fmt: skip
        assert [(r.tool, r.ok) for r in records] == [("search_files", False), ("patch", False)]
        assert records[0].error == "no such directory for needle"
        lines = result.output.splitlines()
        assert lines[0] == "{'error': 'no such directory for needle'}"
        assert lines[1].startswith("{'error': 'patch failed: RuntimeError: disk on fire with key [REDACTED]")
        assert lines[2] == "carried on" and result.status is SandboxStatus.SUCCESS

    async def test_unknown_and_excluded_tools(self, bench: ToolBench, short_dir: str) -> None:
        result = await _run(
            """
            import hermes_tools
            print(hermes_tools._call("frobnicate", {})["error"])
            print(hermes_tools._call("vision_analyze", {"image": "x"})["error"])
            print(hermes_tools._call("execute_code", {"code": "1"})["error"])
            """,
            bench, short_dir, allowed=frozenset({"read_file", "terminal", "execute_code"}),
        )  # fmt: skip
        lines = result.output.splitlines()
        assert lines[0] == "Unknown tool: frobnicate. Available: read_file, terminal"
        assert lines[1].startswith("Tool 'vision_analyze' is not available in execute_code. Use it as a normal")
        assert lines[2].startswith("Tool 'execute_code' is not available in execute_code.")
        assert result.tool_calls_made == 0

    async def test_hang_times_out(self, bench: ToolBench, short_dir: str) -> None:
        config = CodeExecutionConfig(timeout=1, kill_grace_seconds=0.5)
        start = trio.current_time()
        result = await _run("print('working', flush=True)\nwhile True: pass", bench, short_dir, config=config)
        assert result.status is SandboxStatus.TIMEOUT
        assert result.output == "working\nScript timed out after 1s and was killed."
        assert 1 <= trio.current_time() - start < 5

    async def test_parent_gone(self, bench: ToolBench, short_dir: str) -> None:
        """The stub raises RuntimeError when the server goes away; the script exits with the traceback."""
        from actors.sandbox.stubs import SANDBOX_ALLOWED_TOOLS, generate_stub_module

        socket_path = os.path.join(short_dir, "s")
        (stub_dir := os.path.join(short_dir, "d")) and os.mkdir(stub_dir)
        with open(os.path.join(stub_dir, "hermes_tools.py"), "w") as file:
            file.write(generate_stub_module(SANDBOX_ALLOWED_TOOLS))
        listener = trio.socket.socket(trio.socket.AF_UNIX)
        await listener.bind(socket_path)
        listener.listen(1)
        env = {"PYTHONPATH": stub_dir, "HERMES_RPC_SOCKET": socket_path, "HERMES_RPC_TOKEN": "x"}
        code = "from hermes_tools import terminal\ntry:\n    terminal('x')\nexcept RuntimeError as e:\n    print(e)"
        done: list[Any] = []

        async def child() -> None:
            done.append(await trio.run_process(["python3", "-c", code], env=env, capture_stdout=True))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(child)
            conn, _ = await listener.accept()
            conn.close()  # the parent "crashes" while the call is in flight
            listener.close()
        assert done[0].stdout.decode().startswith("Agent process disconnected")

    async def test_child_crash_keeps_partial_output(self, bench: ToolBench, short_dir: str) -> None:
        result = await _run(
            """
            import os, signal
            from hermes_tools import terminal
            print(terminal("step 1")["output"], flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
            """,
            bench, short_dir,
        )  # fmt: skip
        # A jail reports a signal as a shell does (128 + 9), Popen as a negative number.
        # bubblewrap (every mode where it can run) reports its command's death by a signal as 128 + the signal.
        launcher = bench.ctx.jail.launcher
        wrapped = launcher is not None and launcher.status.available
        assert result.status is SandboxStatus.ERROR and result.exit_code == (137 if wrapped else -9)
        assert result.output == "step 1\n" and result.tool_calls_made == 1

    async def test_slow_tool_within_timeout(self, bench: ToolBench, short_dir: str) -> None:
        bench.delay = 0.4
        config = CodeExecutionConfig(timeout=10, per_call_timeout=2)
        result = await _run("from hermes_tools import read_file\nprint(read_file('x')['path'])", bench, short_dir,
                            config=config)  # fmt: skip
        assert result.status is SandboxStatus.SUCCESS and result.output == "x\n"

    async def test_large_responses(self, bench: ToolBench, short_dir: str) -> None:
        result = await _run(
            """
            from hermes_tools import web_search
            sizes = [len(web_search("q", limit=3000)["data"]) for _ in range(3)]
            print(sizes)
            """,
            bench, short_dir,
        )  # fmt: skip
        assert result.output == "[3072000, 3072000, 3072000]\n"

    async def test_background_terminal_runs_foreground(self, bench: ToolBench, short_dir: str) -> None:
        result = await _run(
            "from hermes_tools import terminal\nprint(terminal('make', background=True, pty=True)['args'])",
            bench, short_dir,
        )  # fmt: skip
        assert result.output == "['command']\n"
        assert bench.calls == [("terminal", {"command": "make"})]

    async def test_tool_call_limit(self, bench: ToolBench, short_dir: str) -> None:
        result = await _run(
            """
            from hermes_tools import terminal
            answers = [terminal(str(i)) for i in range(53)]
            print(sum("output" in a for a in answers))
            print(answers[-1]["error"])
            """,
            bench, short_dir,
        )  # fmt: skip
        assert result.output.splitlines() == [
            "50", "Tool call limit reached (50). No more tool calls allowed in this execution.",
        ]  # fmt: skip
        assert result.tool_calls_made == 50


class TestInterrupt:
    """Cancelling the caller's scope stops the child and leaves an interrupted result with the output."""

    async def test_interrupt_mid_run(self, bench: ToolBench, short_dir: str) -> None:
        interrupted: list[SandboxResult] = []
        sandbox = _sandbox(
            """
            import time
            from hermes_tools import terminal
            print("first:", terminal("one")["output"], flush=True)
            time.sleep(60)
            """,
            bench, short_dir, on_interrupted=interrupted.append,
        )  # fmt: skip
        records: list[SandboxToolCall] = []
        sandbox._on_tool_call = records.append
        with trio.move_on_after(30) as scope:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(sandbox.run)
                while not records:
                    await trio.sleep(0.01)
                await trio.sleep(0.2)
                pid = sandbox.statistics().pid
                nursery.cancel_scope.cancel()
        assert not scope.cancelled_caught
        [result] = interrupted
        assert result.status is SandboxStatus.INTERRUPTED
        assert result.output == "first: one\n[execution interrupted — user sent a new message]"
        assert sandbox.state is SandboxState.FINISHED
        assert pid is not None and not pid_running(pid)
        assert os.listdir(short_dir) == []
        assert json.loads(result.tool_result().render())["status"] == "interrupted"

    async def test_interrupt_during_setup(self, bench: ToolBench, short_dir: str) -> None:
        interrupted: list[SandboxResult] = []
        sandbox = _sandbox("print(1)", bench, short_dir, on_interrupted=interrupted.append)
        with trio.CancelScope() as scope:
            scope.cancel()
            await sandbox.run()
        assert [r.status for r in interrupted] == [SandboxStatus.INTERRUPTED]
        assert os.listdir(short_dir) == []

    async def test_runs_once(self, bench: ToolBench, short_dir: str) -> None:
        sandbox = _sandbox("print(1)", bench, short_dir)
        await sandbox.run()
        with pytest.raises(RuntimeError, match="runs only once"):
            await sandbox.run()


class TestSetupFailure:
    """A child that cannot start is an error result, and the directory still goes."""

    async def test_no_jail_can_run(self, bench: ToolBench, short_dir: str, tmp_path) -> None:
        jailed_without_launcher = SessionJail(policy_for(SandboxMode.WORKSPACE_WRITE, tmp_path))
        result = await _run("print(1)", bench, short_dir, jail=jailed_without_launcher)
        assert result.status is SandboxStatus.ERROR
        error = result.error or ""
        with pytest.raises(ToolError, match="could not start the sandbox child"):
            result.tool_result()
        assert error.startswith("could not start the sandbox child: ") and "sandbox.mode" in error

    async def test_socket_path_too_long(self, bench: ToolBench, short_dir: str) -> None:
        deep = os.path.join(short_dir, "d" * 120)
        os.mkdir(deep)
        result = await _sandbox("print(1)", bench, deep).run()
        assert "socket path too long" in (result.error or "")
        assert os.listdir(deep) == []
