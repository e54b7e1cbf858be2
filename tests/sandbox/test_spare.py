"""The spare interpreter: a run in it sees what a cold run sees, and nothing of it outlives its owner."""

from __future__ import annotations

import json
import os
import site
import sys
import textwrap
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import attrs
import pytest
import trio

from actors.sandbox import Sandbox, SandboxResult, SandboxStatus
from actors.sandbox.spare import SpareInterpreters
from config.sandbox import CodeExecutionConfig
from tests.sandbox.helpers import ToolBench
from tools.jail import SessionJail
from tools.results import ToolReply

FAST = CodeExecutionConfig(timeout=20, kill_grace_seconds=0.5, progress_interval_seconds=60)

# What a script can see of how it was started; ``warm`` (python's own command line) is the one difference.
PROBE = """
import json, os, sys
print(json.dumps({
    "globals": sorted(globals()), "name": __name__, "file": __file__, "argv": sys.argv, "path0": sys.path[0],
    "cwd": os.getcwd(), "stdin": os.path.realpath("/proc/self/fd/0"), "stdin_read": sys.stdin.read(),
    "modules": sorted(m for m in sys.modules if m not in ("json", "os") and not m.startswith(("json.", "_json"))),
    "loader": type(__loader__).__name__, "spec": __spec__, "doc": __doc__, "flags": sys.flags.no_site,
    "token": "HERMES_RPC_TOKEN" in os.environ, "env": sorted(os.environ),
    "script": [oct(os.stat(__file__).st_mode), os.stat(__file__).st_uid, open(__file__).read()],
    "warm": "-c" in sys.orig_argv,
}))
import hermes_tools
print(hermes_tools.read_file("notes.txt")["content"])
print("to stderr", file=sys.stderr)
"""


def _processes_naming(directory: str) -> list[int]:
    """Pids whose command line names a path under ``directory`` (a spare names its script's)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as file:
                    if directory.encode() in file.read():
                        found.append(int(entry))
            except OSError:
                continue  # it ended meanwhile
    return found


async def _exit(pid: int, *, kill: bool = False) -> None:
    """Return once ``pid`` has exited (a zombie until its parent reaps it), killed first if ``kill``."""
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        if kill:
            os.kill(pid, 9)
        await trio.lowlevel.wait_readable(pidfd)
    finally:
        trio.lowlevel.notify_closing(pidfd)
        os.close(pidfd)


def _argv0(pid: int) -> str:
    with open(f"/proc/{pid}/cmdline", "rb") as file:
        return file.read().split(b"\0")[0].decode()


async def _left_behind(directory: str) -> tuple[list[str], list[int]]:
    """What is left of runs and spares in ``directory``: its entries, and the processes naming it that do not
    exit (a jail's init may still be exiting for a moment after bubblewrap's outer process)."""
    alive = []
    for pid in _processes_naming(directory):
        with trio.move_on_after(5):
            await _exit(pid)
            continue
        alive.append(pid)
    return os.listdir(directory), alive


@asynccontextmanager
async def _spares(idle_seconds: float = 60) -> AsyncIterator[SpareInterpreters]:
    """A pool whose tasks live in a nursery of the test, as a session's do in its own; stopped after."""
    async with trio.open_nursery() as nursery:
        yield SpareInterpreters(nursery.start_soon, idle_seconds=idle_seconds)
        nursery.cancel_scope.cancel()


def _sandbox(code: str, bench: ToolBench, short_dir: str, spares: SpareInterpreters | None, **options: Any) -> Sandbox:
    return Sandbox(
        textwrap.dedent(code), call_tool=options.pop("call_tool", bench.call_tool), allowed_tools=bench.enabled,
        config=options.pop("config", FAST), gate=bench.gate, base_dir=short_dir,
        jail=options.pop("jail", bench.ctx.jail), spares=spares, **options,
    )  # fmt: skip


async def _warm(spares: SpareInterpreters, bench: ToolBench, short_dir: str, **options: Any) -> None:
    """Run a first script so that a spare is started, and wait until it waits."""
    result = await _sandbox("pass", bench, short_dir, spares, **options).run()
    assert result.status is SandboxStatus.SUCCESS, result
    assert await spares.started()


def _observed(result: SandboxResult, directory_of: Callable[[str], str]) -> dict[str, Any]:
    """The probe's report with its run's own directory replaced, to compare two runs."""
    first, rest = result.output.split("\n", 1)
    report = json.loads(first)
    own = os.path.dirname(report["file"])
    report = json.loads(first.replace(own, "RUNDIR"))
    report["rest"] = directory_of(rest.replace(own, "RUNDIR"))
    return report


class TestSameAsCold:
    """A script run by the spare sees exactly what a cold run shows it, and its output and exit are the same."""

    async def test_probe(self, bench: ToolBench, short_dir: str) -> None:
        async with _spares() as spares:
            cold = await _sandbox(PROBE, bench, short_dir, None).run()
            await _warm(spares, bench, short_dir)
            warm = await _sandbox(PROBE, bench, short_dir, spares).run()
        assert cold.status is warm.status is SandboxStatus.SUCCESS, (cold, warm)
        seen_cold, seen_warm = _observed(cold, str), _observed(warm, str)
        assert (seen_cold.pop("warm"), seen_warm.pop("warm")) == (False, True)
        assert seen_warm == seen_cold
        assert seen_warm["stdin"] == "/dev/null" and seen_warm["name"] == "__main__"
        assert "contents of notes.txt" in seen_warm["rest"]
        assert await _left_behind(short_dir) == ([], [])

    @pytest.mark.parametrize(
        "code",
        [
            "print('out')\nraise ValueError('boom')\n",
            "def f():\n    1 / 0\nf()\n",
            "import sys\nprint('bye')\nsys.exit(3)\n",
            "raise SystemExit('a message')\n",
            "print('a'\n",  # a syntax error: no traceback header, as python prints it
            "# -*- coding: latin-1 -*-\nprint('caf\\xe9')\n",
            "text = '" + "x" * 300_000 + "'\nprint(len(text), text[-3:])\n",  # more than a pipe holds
        ],
        ids=["exception", "nested", "exit-code", "exit-message", "syntax-error", "coding", "large"],
    )
    async def test_failures_read_the_same(self, bench: ToolBench, short_dir: str, code: str) -> None:
        async with _spares() as spares:
            cold = await _sandbox(code, bench, short_dir, None).run()
            await _warm(spares, bench, short_dir)
            assert spares.waiting
            warm = await _sandbox(code, bench, short_dir, spares).run()
            assert not spares.waiting or await spares.started()
        cold_dir, warm_dir = (_run_dir(result.output) for result in (cold, warm))
        assert (warm.status, warm.exit_code) == (cold.status, cold.exit_code)
        assert warm.output.replace(warm_dir, "RUNDIR") == cold.output.replace(cold_dir, "RUNDIR")
        assert "<string>" not in warm.output
        assert await _left_behind(short_dir) == ([], [])


def _run_dir(output: str) -> str:
    start = output.find("/hx-sbx-")
    return output[start : output.find("/", start + 1)] if start >= 0 else "\0"


class TestLimits:
    """A run in a spare keeps the run's timeout, interrupt and memory limit."""

    async def test_timeout(self, bench: ToolBench, short_dir: str) -> None:
        async with _spares() as spares:
            await _warm(spares, bench, short_dir, config=attrs.evolve(FAST, timeout=1))
            result = await _sandbox("print('x', flush=True)\nwhile True: pass\n", bench, short_dir, spares,
                                    config=attrs.evolve(FAST, timeout=1)).run()  # fmt: skip
        assert result.status is SandboxStatus.TIMEOUT and "x" in result.output
        assert await _left_behind(short_dir) == ([], [])

    async def test_interrupt_kills_everything(self, bench: ToolBench, short_dir: str) -> None:
        # A child that names the run's directory (so the test can look for it), then a call that never returns.
        code = (
            "import subprocess, sys, hermes_tools\n"
            "subprocess.Popen([sys.executable, '-S', '-c', 'import time; time.sleep(60)', __file__])\n"
            "print('started', flush=True)\nhermes_tools.read_file('x')\n"
        )
        called = trio.Event()

        async def call_tool(name: str, args: dict[str, Any]) -> ToolReply:
            called.set()
            await trio.sleep_forever()
            raise AssertionError("unreachable")

        interrupted: list[SandboxResult] = []
        async with _spares() as spares:
            await _warm(spares, bench, short_dir)
            sandbox = _sandbox(code, bench, short_dir, spares, on_interrupted=interrupted.append, call_tool=call_tool)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(sandbox.run)
                await called.wait()
                assert len(_processes_naming(short_dir)) >= 2  # the script and its child
                nursery.cancel_scope.cancel()
        assert interrupted and interrupted[0].status is SandboxStatus.INTERRUPTED
        assert "started" in interrupted[0].output
        assert await _left_behind(short_dir) == ([], [])

    async def test_memory_limit_before_the_script(self, bench: ToolBench, short_dir: str) -> None:
        config = attrs.evolve(FAST, memory_limit_mb=256)
        async with _spares() as spares:
            await _warm(spares, bench, short_dir, config=config)
            result = await _sandbox(
                "import resource\nprint(resource.getrlimit(resource.RLIMIT_AS)[0] // 2**20)\n", bench, short_dir, spares,
                config=config,
            ).run()  # fmt: skip
        assert result.output.split() == ["256"], result


class TestFallback:
    """A run whose recipe is not the spare's starts cold, and the spare is stopped and removed."""

    async def test_another_jail(self, bench: ToolBench, short_dir: str, tmp_path) -> None:
        (tmp_path / "elsewhere").mkdir()
        jail = bench.ctx.jail
        other = SessionJail(attrs.evolve(jail.policy, workspace=str(tmp_path / "elsewhere")), jail.launcher)
        async with _spares() as spares:
            await _warm(spares, bench, short_dir)
            result = await _sandbox("import sys\nprint('-c' in sys.orig_argv)\n", bench, short_dir, spares, jail=other).run()
            assert result.output.split() == ["False"]  # cold
            assert await spares.started()  # and one for the new jail waits
        assert await _left_behind(short_dir) == ([], [])

    async def test_another_environment(self, bench: ToolBench, short_dir: str) -> None:
        async with _spares() as spares:
            await _warm(spares, bench, short_dir, environ={"PATH": os.environ["PATH"]})
            result = await _sandbox(
                "import os, sys\nprint('-c' in sys.orig_argv, os.environ.get('LANG'))\n", bench, short_dir, spares,
                environ={"PATH": os.environ["PATH"], "LANG": "C.UTF-8"},
            ).run()  # fmt: skip
            assert result.output.split() == ["False", "C.UTF-8"]
        assert await _left_behind(short_dir) == ([], [])

    async def test_a_dead_spare(self, bench: ToolBench, short_dir: str) -> None:
        """A spare whose interpreter was killed while it waited is never handed to a run."""
        async with _spares() as spares:
            await _warm(spares, bench, short_dir)
            jail = _processes_naming(short_dir)
            interpreters = [pid for pid in jail if _argv0(pid) == sys.executable]
            assert len(interpreters) == 1
            await _exit(interpreters[0], kill=True)
            for pid in jail:  # its jail ends with it
                await _exit(pid)
            result = await _sandbox("print('ran')\n", bench, short_dir, spares).run()
            assert result.output.split() == ["ran"], result
        assert await _left_behind(short_dir) == ([], [])


class TestNothingLeaks:
    """Cancelled while a spare starts, while it waits, or idle too long: no process, socket or directory is left."""

    async def test_cancelled_while_starting(self, bench: ToolBench, short_dir: str) -> None:
        for checkpoints in range(0, 12, 3):  # cancelled at different points of its start
            async with _spares() as spares:
                await _warm(spares, bench, short_dir)
                spares.close()
                result = await _sandbox("pass", bench, short_dir, spares).run()  # refills: a new spare starts
                assert result.status is SandboxStatus.SUCCESS
                for _ in range(checkpoints):
                    await trio.lowlevel.checkpoint()
            assert await _left_behind(short_dir) == ([], [])

    async def test_cancelled_while_waiting(self, bench: ToolBench, short_dir: str) -> None:
        async with _spares() as spares:
            await _warm(spares, bench, short_dir)
            assert _processes_naming(short_dir) and os.listdir(short_dir)
        assert await _left_behind(short_dir) == ([], [])

    async def test_idle_spare_is_stopped(self, bench: ToolBench, short_dir: str) -> None:
        async with trio.open_nursery() as nursery:
            spares = SpareInterpreters(nursery.start_soon, idle_seconds=0.05)
            await _warm(spares, bench, short_dir)
        # The nursery ended by itself: the spare's task stopped it after its idle time.
        assert not spares.waiting
        assert await _left_behind(short_dir) == ([], [])

    async def test_a_run_ending_as_the_session_closes(self, bench: ToolBench, short_dir: str) -> None:
        """The session's nursery closed already: the run's result stands and no spare starts."""
        async with trio.open_nursery() as nursery:
            spares = SpareInterpreters(nursery.start_soon, idle_seconds=60)
        result = await _sandbox("print('done')", bench, short_dir, spares).run()
        assert result.output.split() == ["done"]
        assert not await spares.started()
        assert await _left_behind(short_dir) == ([], [])

    async def test_close_stops_it(self, bench: ToolBench, short_dir: str) -> None:
        async with trio.open_nursery() as nursery:
            spares = SpareInterpreters(nursery.start_soon, idle_seconds=60)
            await _warm(spares, bench, short_dir)
            spares.close()
        assert await _left_behind(short_dir) == ([], [])


_NOBODY = 65534

# Run as the ordinary user: a cold run, then one in the spare the first left, in a jail of that user's.
_AS_NOBODY = """
import json, os, shutil, sys, trio
sys.path.insert(0, {root!r})
from pathlib import Path
from actors.sandbox import Sandbox
from actors.sandbox.spare import SpareInterpreters
from config.sandbox import CodeExecutionConfig, SandboxConfig
from tests.jail.fixtures import policy_for
from tests.sandbox.test_spare import PROBE, _left_behind
from tools.jail import SandboxMode, SessionJail, open_launcher
from tools.results import ToolReply

async def call_tool(name, args):
    return ToolReply('{{"content": "read"}}')

async def main():
    work, runs = Path({work!r}), {runs!r}
    found = {{}}
    if shutil.which(sys.executable) is None:  # as the launcher checks a program before it starts it
        print(json.dumps({{"available": False, "error": f"{{sys.executable}} is not executable by this user"}}))
        return
    async with open_launcher(SandboxConfig()) as launcher:
        found["available"] = launcher.status.available
        if not launcher.status.available:
            found["error"] = launcher.status.error
            print(json.dumps(found)); return
        jail = SessionJail(policy_for(SandboxMode.WORKSPACE_WRITE, work, home=work / "home"), launcher)
        async with trio.open_nursery() as nursery:
            spares = SpareInterpreters(nursery.start_soon, idle_seconds=60)
            for _ in range(2):
                sandbox = Sandbox(PROBE, call_tool=call_tool, allowed_tools=frozenset({{"read_file"}}),
                                  config=CodeExecutionConfig(timeout=20), base_dir=runs, jail=jail, spares=spares)
                result = await sandbox.run()
                assert result.exit_code == 0, result
                report = json.loads(result.output.split("\\n", 1)[0])
                found.setdefault("warm", []).append(report["warm"])
                found.setdefault("uid", []).append(report["script"][1])
            found["waiting"] = await spares.started()
            nursery.cancel_scope.cancel()
        found["left"] = await _left_behind(runs)
    print(json.dumps(found))

trio.run(main)
"""


def _interpreter_for_nobody() -> str:
    """This interpreter if the ordinary user may run it, else the system's of the same version (if any)."""
    import shutil
    import subprocess

    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for candidate in (sys.executable, f"/usr/bin/{version}", f"/usr/local/bin/{version}"):
        check = subprocess.run(
            ["setpriv", f"--reuid={_NOBODY}", f"--regid={_NOBODY}", "--clear-groups", "test", "-x", candidate],
            capture_output=True,
        )  # fmt: skip
        if check.returncode == 0 and shutil.which(candidate) is not None:
            return candidate
    return sys.executable  # the probe reports it cannot run it


class TestAsOrdinaryUser:
    """An ordinary user's session gets its spare too, its script owned by that user, and nothing of it is left."""

    def test_spare_as_nobody(self) -> None:
        import shutil
        import subprocess
        import tempfile
        from pathlib import Path

        setpriv = shutil.which("setpriv")
        if os.geteuid() != 0 or setpriv is None:
            pytest.skip("needs root and setpriv to become an ordinary user")
        top = Path(tempfile.mkdtemp(prefix="hx-nobody-", dir="/tmp"))
        try:
            for path in (top, top / "work", top / "runs"):
                path.mkdir(exist_ok=True)
                os.chown(path, _NOBODY, _NOBODY)
            script = top / "probe.py"
            root = str(Path(__file__).parents[2])
            script.write_text(_AS_NOBODY.format(root=root, work=str(top / "work"), runs=str(top / "runs")))
            # The system's interpreter where this one (a venv of a home's python) is not the user's to run; this
            # one's packages on its path (the same python version: the jail runs the script with the same one).
            python = _interpreter_for_nobody()
            env = {"PATH": os.environ["PATH"], "HOME": str(top), "PYTHONPATH": os.pathsep.join(site.getsitepackages())}
            done = subprocess.run(
                [setpriv, f"--reuid={_NOBODY}", f"--regid={_NOBODY}", "--clear-groups", python, str(script)],
                capture_output=True, text=True, timeout=120, env=env,
            )  # fmt: skip
            assert done.returncode == 0, done.stderr
            found = json.loads(done.stdout)
            if not found["available"]:
                pytest.skip(f"no execute_code for an ordinary user here: {found['error']}")
            assert found == {
                "available": True, "warm": [False, True], "uid": [_NOBODY, _NOBODY], "waiting": True,
                "left": [[], []],
            }  # fmt: skip
        finally:
            shutil.rmtree(top, ignore_errors=True)
