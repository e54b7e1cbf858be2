"""Isolation and limits with real processes: threads, environment, process groups, output floods, memory."""

from __future__ import annotations

import json
import os
import textwrap
from typing import Any

import trio

from actors.sandbox import Sandbox, SandboxResult, SandboxStatus
from config.sandbox import CodeExecutionConfig
from tests.sandbox.helpers import PRINT_PIDS, ToolBench, host_pids, pid_running

FAST = CodeExecutionConfig(timeout=20, kill_grace_seconds=0.5, progress_interval_seconds=60)


async def _run(code: str, bench: ToolBench, short_dir: str, **options: Any) -> SandboxResult:
    sandbox = Sandbox(
        textwrap.dedent(code),
        call_tool=bench.call_tool,
        allowed_tools=bench.enabled,
        config=options.pop("config", FAST),
        gate=bench.gate,
        base_dir=short_dir,
        jail=options.pop("jail", bench.ctx.jail),
        **options,
    )
    result = await sandbox.run()
    assert os.listdir(short_dir) == []
    return result


def _rss_kib() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


class TestThreads:
    """Threads in a script get their own answers, and parallel-safe calls really overlap."""

    async def test_ten_threads(self, bench: ToolBench, short_dir: str) -> None:
        bench.delay = 0.5
        result = await _run(
            """
            import time
            from concurrent.futures import ThreadPoolExecutor
            from hermes_tools import read_file, web_extract
            def work(i):
                if i % 2:
                    return read_file(f"file{i}.txt")["path"]
                return web_extract([f"http://h/{i}"])["results"][0]["url"]
            start = time.monotonic()
            with ThreadPoolExecutor(10) as pool:
                answers = list(pool.map(work, range(10)))
            print(answers)
            print(round(time.monotonic() - start, 1))
            """,
            bench, short_dir,
        )  # fmt: skip
        answers, elapsed = result.output.splitlines()
        expected = [f"file{i}.txt" if i % 2 else f"http://h/{i}" for i in range(10)]
        assert answers == repr(expected)
        assert bench.running.peak == 8  # overlapped up to the gate's limit
        assert float(elapsed) < 2.5  # serial would take 5 s; two waves take 1 s
        assert result.tool_calls_made == 10

    async def test_a_call_that_cannot_be_sent_leaves_the_connection_usable(
        self, bench: ToolBench, short_dir: str
    ) -> None:
        """Arguments that are not JSON fail in the calling thread, and every later call is still answered."""
        result = await _run(
            """
            import threading
            from hermes_tools import read_file
            try:
                read_file(object())
            except TypeError as exc:
                print("not sent:", type(exc).__name__)
            thread = threading.Thread(target=lambda: print(read_file("a.txt")["path"]))
            thread.start()
            thread.join()
            print(read_file("b.txt")["path"])
            """,
            bench, short_dir, config=CodeExecutionConfig(timeout=5, kill_grace_seconds=0.5),
        )  # fmt: skip
        assert result.status is SandboxStatus.SUCCESS, result.output
        assert result.output.splitlines() == ["not sent: TypeError", "a.txt", "b.txt"]

    async def test_large_responses_interleave_intact(self, bench: ToolBench, short_dir: str) -> None:
        """Responses bigger than the socket buffer, written concurrently, arrive whole and in their own thread."""
        result = await _run(
            """
            from concurrent.futures import ThreadPoolExecutor
            from hermes_tools import web_search
            sizes = list(ThreadPoolExecutor(6).map(lambda kb: len(web_search("q", limit=kb)["data"]),
                                                   [500 + i for i in range(12)]))
            print(sizes)
            """,
            bench, short_dir,
        )  # fmt: skip
        assert result.output == f"{[(500 + i) * 1024 for i in range(12)]}\n"

    async def test_unsafe_tools_stay_serial(self, bench: ToolBench, short_dir: str) -> None:
        bench.delay = 0.1
        await _run(
            """
            from concurrent.futures import ThreadPoolExecutor
            from hermes_tools import write_file
            with ThreadPoolExecutor(4) as pool:
                print(list(pool.map(lambda i: write_file(f"w{i}", "x")["written"], range(4))))
            """,
            bench, short_dir,
        )  # fmt: skip
        assert bench.running.peak == 1


class TestEnvironment:
    """The child sees no secrets, only the sandbox directory on its path, and strict mode hides site-packages."""

    async def test_no_secrets(self, bench: ToolBench, short_dir: str, monkeypatch) -> None:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-abcdefghijklmnopqrstuvwxyz0123")
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-zzz")
        monkeypatch.setenv("GH_TOKEN", "x")
        monkeypatch.setenv("DATABASE_PASSWORD", "x")
        monkeypatch.setenv("UNRELATED_SETTING", "x")
        monkeypatch.setenv("MY_CUSTOM_KEY", "allowed")
        result = await _run(
            """
            import os, sys, hermes_tools
            print(sorted(os.environ))
            print(os.environ.get("MY_CUSTOM_KEY"))
            print(os.environ["PYTHONPATH"].split(os.pathsep)[0] == os.getcwd())
            """,
            bench, short_dir, env_passthrough=["MY_CUSTOM_KEY"],
        )  # fmt: skip
        names, custom, path_is_sandbox = result.output.splitlines()
        for secret in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GH_TOKEN", "DATABASE_PASSWORD", "UNRELATED_SETTING",
                       "HERMES_RPC_TOKEN"):  # fmt: skip
            assert f"'{secret}'" not in names, secret
        assert custom == "allowed" and path_is_sandbox == "True"

    async def test_token_not_inherited_by_grandchildren(self, bench: ToolBench, short_dir: str) -> None:
        result = await _run(
            "import hermes_tools, subprocess\nsubprocess.run(['sh', '-c', 'echo token=$HERMES_RPC_TOKEN'])",
            bench, short_dir,
        )  # fmt: skip
        assert result.output == "token=\n"

    async def test_no_pth_file_runs(self, bench: ToolBench, short_dir: str) -> None:
        """The child starts without ``site``: no .pth import hook (the editable install's) is loaded."""
        code = "import sys, hermes_tools, attrs\nprint('site' in sys.modules, [m for m in sys.modules if 'editable' in m])"
        assert (await _run(code, bench, short_dir)).output == "False []\n"

    async def test_strict_mode(self, bench: ToolBench, short_dir: str) -> None:
        code = "import hermes_tools\ntry:\n    import attrs\n    print('importable')\nexcept ImportError:\n    print('hidden')"
        strict = CodeExecutionConfig(strict=True, kill_grace_seconds=0.5)
        assert (await _run(code, bench, short_dir, config=strict)).output == "hidden\n"
        assert (await _run(code, bench, short_dir)).output == "importable\n"

    async def test_stdin_is_devnull_and_own_session(self, bench: ToolBench, short_dir: str) -> None:
        # Its own session (no TIOCSTI into the daemon's terminal): led by itself, or by its jail's init.
        result = await _run(
            "import os, sys\nprint(repr(sys.stdin.read()))\nprint(os.getsid(0) in (1, os.getpid()))", bench, short_dir
        )
        assert result.output == "''\nTrue\n"


class TestProcessGroup:
    """On timeout the whole group gets SIGTERM, then SIGKILL after the grace: no grandchild survives."""

    async def test_stubborn_grandchildren(self, bench: ToolBench, short_dir: str) -> None:
        config = CodeExecutionConfig(timeout=1.5, kill_grace_seconds=1.0)
        start = trio.current_time()
        result = await _run(
            PRINT_PIDS + textwrap.dedent("""
            import signal, subprocess, sys, time
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            stubborn = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"
            kids = [subprocess.Popen([sys.executable, "-c", stubborn]) for _ in range(2)]
            shell = subprocess.Popen(["sh", "-c", "sleep 600 & sleep 600"])
            hx_pids(*(k.pid for k in kids + [shell]))
            time.sleep(600)
            """),
            bench, short_dir, config=config,
        )  # fmt: skip
        elapsed = trio.current_time() - start
        assert result.status is SandboxStatus.TIMEOUT
        assert len(result.output.splitlines()[0].split()) == 3
        assert not any(pid_running(pid) for pid in host_pids(result.output.splitlines()[0]))
        assert 2.5 <= elapsed < 8  # timeout + the full grace (they ignored SIGTERM), then SIGKILL

    async def test_polite_child_is_not_kept_for_the_grace(self, bench: ToolBench, short_dir: str) -> None:
        config = CodeExecutionConfig(timeout=1, kill_grace_seconds=5)
        start = trio.current_time()
        result = await _run("import time\ntime.sleep(600)", bench, short_dir, config=config)
        assert result.status is SandboxStatus.TIMEOUT
        assert trio.current_time() - start < 4  # SIGTERM sufficed; no 5 s wait

    async def test_leftover_background_process_after_success(self, bench: ToolBench, short_dir: str) -> None:
        result = await _run(PRINT_PIDS + "import subprocess\nhx_pids(subprocess.Popen(['sleep', '600']).pid)", bench, short_dir)
        assert result.status is SandboxStatus.SUCCESS
        assert not any(pid_running(pid) for pid in host_pids(result.output))


class TestOutputLimits:
    """A flood of output keeps the daemon's memory bounded and keeps head and tail."""

    async def test_100_mb_of_stdout(self, bench: ToolBench, short_dir: str) -> None:
        baseline = _rss_kib()
        peak = baseline

        async def sample() -> None:
            nonlocal peak
            while True:
                peak = max(peak, _rss_kib())
                await trio.sleep(0.01)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(sample)
            result = await _run(
                """
                import sys
                out = sys.stdout.buffer
                out.write(b"HEAD-MARKER\\n")
                chunk = b"y" * (1 << 20)
                for _ in range(100):
                    out.write(chunk)
                out.write(b"\\nTAIL-MARKER\\n")
                sys.stderr.write("e" * 50_000)
                sys.exit(3)
                """,
                bench, short_dir,
            )  # fmt: skip
            nursery.cancel_scope.cancel()
        assert result.status is SandboxStatus.ERROR and result.exit_code == 3
        assert result.output.startswith("HEAD-MARKER\n")
        total = 12 + 100 * (1 << 20) + 13
        assert f"[OUTPUT TRUNCATED - {total - 50_000} bytes omitted out of {total} total]" in result.output
        stdout, stderr = result.output.split("--- stderr ---\n")
        assert stdout.endswith("TAIL-MARKER\n")
        assert len(stdout) < 50_200 and len(stderr) < 10_200 and "OUTPUT TRUNCATED" in stderr
        assert result.stdout_truncated and result.stderr_truncated and result.stdout_total_bytes == total
        assert peak - baseline < 30_000, f"RSS grew by {peak - baseline} KiB"
        assert json.loads(result.tool_result().render())["output_truncated"] is True


class TestMemoryLimit:
    """memory_limit_mb caps the child's address space."""

    async def test_allocation_fails(self, bench: ToolBench, short_dir: str) -> None:
        config = CodeExecutionConfig(memory_limit_mb=300, kill_grace_seconds=0.5)
        result = await _run(
            "import time\ntime.sleep(0.2)\ntry:\n    b = bytearray(600 * 1024 * 1024)\n    print('allocated')\n"
            "except MemoryError:\n    print('refused')",
            bench, short_dir, config=config,
        )  # fmt: skip
        assert result.output == "refused\n"
        assert (await _run("b = bytearray(600 * 1024 * 1024)\nprint('allocated')", bench, short_dir)).output == (
            "allocated\n"
        )


class TestEscapedProcess:
    """A process that left the group (setsid) does not keep the run open, nor survive it: every mode,
    full-access too, runs the script in a PID namespace that ends with the run."""

    async def test_setsid_escapee(self, bench: ToolBench, short_dir: str) -> None:
        result = await _run(
            PRINT_PIDS + "import subprocess\nhx_pids(subprocess.Popen(['sleep', '30'], start_new_session=True).pid)",
            bench, short_dir,
        )  # fmt: skip
        assert result.status is SandboxStatus.SUCCESS
        assert host_pids(result.output) == [0]


class TestProgress:
    """A quiet script still produces periodic progress events."""

    async def test_ticks(self, bench: ToolBench, short_dir: str) -> None:
        progress: list[str] = []
        config = CodeExecutionConfig(progress_interval_seconds=0.3, kill_grace_seconds=0.5)
        await _run("import time\ntime.sleep(1.2)", bench, short_dir, config=config, on_progress=progress.append)
        assert len(progress) >= 2
        assert progress[0] == "execute_code: 0 tool calls, 0 s"
        assert progress[-1] == "execute_code: 0 tool calls, 1 s"


class TestFork:
    """A script that forks gets a fresh connection in the child, even with a call in flight in the parent."""

    async def test_fork_during_a_call(self, bench: ToolBench, short_dir: str) -> None:
        bench.delay = 0.5
        result = await _run(
            """
            import os, threading, time
            from hermes_tools import read_file
            slow = threading.Thread(target=lambda: print("thread", read_file("slow")["path"], flush=True))
            slow.start()
            time.sleep(0.2)  # the thread is now reading the shared connection
            pid = os.fork()
            if pid == 0:
                print("child", read_file("in-child")["path"], flush=True)
                os._exit(0)
            os.waitpid(pid, 0)
            slow.join()
            """,
            bench, short_dir,
        )  # fmt: skip
        assert sorted(result.output.splitlines()) == ["child in-child", "thread slow"]
        assert result.tool_calls_made == 2
