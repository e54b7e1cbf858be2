"""A jailed session's resident shell: its foreground commands in one jail, each leaving nothing behind."""

from __future__ import annotations

import logging
import os
import signal
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio

from config.sandbox import SandboxConfig
from config.terminal import TerminalConfig
from tests.jail.as_nobody import run_as_nobody, work
from tests.jail.fixtures import Jails, namespace_pids, policy_for
from tests.terminal.helpers import FAST, pid_alive, wait_dead, wait_for_file
from tests.terminal.refusal_probe import refusals
from tests.terminal.resident_probe import EXPECTED, exercise
from tools.jail import Launcher, SandboxMode, SessionJail, open_launcher, resident
from tools.jail.resident import ResidentShell
from tools.terminal import ForegroundResult, ForegroundRun, build_shell_env, run_foreground

OFF = attrs.evolve(FAST, resident_shell=False)
NAMESPACE = "readlink /proc/self/ns/pid"
__all__ = ["work"]  # the fixture, imported


async def run(jail: SessionJail, command: str, cwd: Path | str, config: TerminalConfig = FAST) -> ForegroundResult:
    """One foreground command of the session whose jail is ``jail``."""
    return await run_foreground(command, cwd=str(cwd), env=build_shell_env(os.environ), config=config, jail=jail)


def shell_of(jail: SessionJail) -> ResidentShell:
    """The session's resident shell (every jail made with a launcher has one)."""
    assert jail.shell is not None
    return jail.shell


def resident_pids(jail: SessionJail) -> tuple[int, int]:
    """The host pids of the running resident's outer bwrap and its init."""
    shell = shell_of(jail)
    outer, init = shell.outer_pid, shell.init_pid
    assert outer is not None and init is not None
    return outer, init


def gone(pid: int) -> bool:
    """No process of that pid, not even one waiting to be reaped."""
    return not os.path.exists(f"/proc/{pid}")


async def wait_gone(pid: int, within: float = 10.0) -> bool:
    """True once no process of that pid is left, not even one waiting to be reaped."""
    with trio.move_on_after(within):
        while not gone(pid):
            await trio.sleep(0.01)
        return True
    return False


def left_in_namespace(init: int) -> list[int]:
    """The host pids of the processes in the resident's namespace other than its init."""
    return [pid for pid in namespace_pids(os.readlink(f"/proc/{init}/ns/pid")) if pid != init]


class TestOneJailPerSession:
    """A session's foreground commands run in one jail: the second starts no bwrap."""

    async def test_two_commands_share_the_jail(self, hostile_jails: Jails, tmp_path: Path) -> None:
        jail = hostile_jails.jail(tmp_path)
        first = await run(jail, NAMESPACE, tmp_path)
        outer, init = resident_pids(jail)
        second = await run(jail, NAMESPACE, tmp_path)
        assert first.output == second.output == os.readlink(f"/proc/{init}/ns/pid")
        assert (shell_of(jail).started, resident_pids(jail)) == (1, (outer, init))

    async def test_switched_off(self, hostile_jails: Jails, tmp_path: Path) -> None:
        """``terminal.resident_shell: false``: a jail per command, as before."""
        jail = hostile_jails.jail(tmp_path)
        first, second = await run(jail, NAMESPACE, tmp_path, OFF), await run(jail, NAMESPACE, tmp_path, OFF)
        assert first.output != second.output
        assert (shell_of(jail).started, shell_of(jail).init_pid) == (0, None)

    async def test_policy_change_starts_another(self, hostile_jails: Jails, tmp_path: Path) -> None:
        jail = hostile_jails.jail(tmp_path)
        first = await run(jail, NAMESPACE, tmp_path)
        outer, init = resident_pids(jail)
        moved = attrs.evolve(jail, policy=attrs.evolve(jail.policy, network=not jail.policy.network))
        second = await run(moved, NAMESPACE, tmp_path)
        assert first.output != second.output
        assert shell_of(jail).started == 2
        assert gone(outer) and gone(init)

    async def test_full_access_keeps_a_jail_per_command(self, launcher: Launcher, tmp_path: Path) -> None:
        jail = Jails(SandboxMode.FULL_ACCESS, launcher).jail(tmp_path)
        await run(jail, "true", tmp_path)
        assert shell_of(jail).started == 0


class TestNothingLeftBehind:
    """What a command started is gone once it ends, however it ends; the resident itself stays."""

    async def test_after_a_command(self, hostile_jails: Jails, tmp_path: Path) -> None:
        jail = hostile_jails.jail(tmp_path)
        result = await run(jail, "setsid sleep 1000 & (setsid nohup sleep 1000 &) & echo started", tmp_path)
        _, init = resident_pids(jail)
        assert result.output == "started"
        assert result.note is not None and "left processes running" in result.note
        assert left_in_namespace(init) == []

    async def test_after_a_clean_command_no_note(self, hostile_jails: Jails, tmp_path: Path) -> None:
        result = await run(hostile_jails.jail(tmp_path), "sleep 0 & wait; echo done", tmp_path)
        assert (result.output, result.note) == ("done", None)

    @pytest.mark.parametrize("how", ["interrupt", "timeout"])
    async def test_after_a_stopped_command(self, hostile_jails: Jails, tmp_path: Path, how: str) -> None:
        jail = hostile_jails.jail(tmp_path)
        marker = tmp_path / "marker"
        run_ = ForegroundRun(
            f"setsid sleep 1000 & (trap '' TERM; sleep 1000) & echo up > {marker}; sleep 1000", cwd=str(tmp_path),
            env=build_shell_env(os.environ), config=FAST, jail=jail,
        )  # fmt: skip
        async with trio.open_nursery() as nursery:
            scope = trio.CancelScope()

            async def command() -> None:
                with scope:
                    await run_.run()

            nursery.start_soon(command)
            await wait_for_file(marker)
            _, init = resident_pids(jail)
            assert len(left_in_namespace(init)) >= 3
            if how == "timeout":
                scope.deadline = trio.current_time()  # what a timeout's move_on_after does
            else:
                nursery.cancel_scope.cancel()
        # Cancelled propagated only once everything was gone, even what ignores SIGTERM.
        assert left_in_namespace(init) == []
        after = await run(jail, "echo next", tmp_path)
        assert (after.output, shell_of(jail).started, resident_pids(jail)[1]) == ("next", 1, init)


class TestInitOutOfReach:
    """A command cannot read, write or kill the resident's init."""

    async def test_descriptors_memory_and_signals(self, hostile_jails: Jails, tmp_path: Path) -> None:
        jail = hostile_jails.jail(tmp_path)
        await run(jail, "true", tmp_path)
        _, init = resident_pids(jail)
        probe = (
            "ls -l /proc/1/fd >/dev/null 2>&1 || echo no-listing; "
            "for fd in /proc/1/fd/*; do readlink $fd >/dev/null 2>&1 && echo link $fd; "
            "  echo x 2>/dev/null > $fd && echo wrote $fd; done; "
            "head -c1 /proc/1/mem >/dev/null 2>&1 || echo no-mem; "
            "cat /proc/1/environ >/dev/null 2>&1 || echo no-environ; "
            "kill -9 1; kill -TERM 1; kill -INT 1; kill -HUP 1; kill -CHLD 1; echo signalled"
        )
        result = await run(jail, probe, tmp_path)
        assert result.output.splitlines() == ["no-listing", "no-mem", "no-environ", "signalled"]
        after = await run(jail, "echo alive", tmp_path)
        assert (after.output, shell_of(jail).started, resident_pids(jail)[1]) == ("alive", 1, init)

    async def test_killed_resident_is_replaced(self, hostile_jails: Jails, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
        """Killed from outside (or by the kernel) between commands: the next command gets a new one, logged."""
        jail = hostile_jails.jail(tmp_path)
        await run(jail, "true", tmp_path)
        outer, init = resident_pids(jail)
        os.kill(init, signal.SIGKILL)
        assert await wait_dead(init)
        with caplog.at_level(logging.WARNING, logger="tools.jail.resident"):
            result = await run(jail, "echo again", tmp_path)
        assert (result.output, shell_of(jail).started) == ("again", 2)
        assert "resident shell of a session ended" in caplog.text
        assert gone(outer)

    async def test_killed_under_a_command(self, hostile_jails: Jails, tmp_path: Path) -> None:
        jail = hostile_jails.jail(tmp_path)
        marker = tmp_path / "marker"
        await run(jail, "true", tmp_path)
        outer, init = resident_pids(jail)
        async with trio.open_nursery() as nursery:
            results: list[ForegroundResult] = []

            async def command() -> None:
                results.append(await run(jail, f"echo up > {marker}; sleep 1000", tmp_path))

            nursery.start_soon(command)
            await wait_for_file(marker)
            os.kill(init, signal.SIGKILL)
        assert results[0].exit_code == -signal.SIGKILL
        assert gone(outer) and gone(init)
        assert (await run(jail, "echo again", tmp_path)).output == "again"
        assert shell_of(jail).started == 2


class TestSharedMemory:
    """``/dev/shm`` is empty and no System V IPC object is left when each command starts; each session's are its own."""

    async def test_emptied_between_commands(self, hostile_jails: Jails, tmp_path: Path) -> None:
        jail = hostile_jails.jail(tmp_path)
        await run(jail, "touch /dev/shm/a; mkdir -p /dev/shm/d/e; touch /dev/shm/d/e/f; chmod 0 /dev/shm/d/e /dev/shm/d", tmp_path)
        result = await run(jail, "ls -A /dev/shm", tmp_path)
        assert (result.exit_code, result.output, shell_of(jail).started) == (0, "", 1)

    async def test_system_v_ipc_removed_between_commands(self, hostile_jails: Jails, tmp_path: Path) -> None:
        jail = hostile_jails.jail(tmp_path)
        made = await run(jail, "ipcmk -M 4096 && ipcmk -S 2 && ipcmk -Q && ipcs -m -s -q | grep -c '^0x'", tmp_path)
        after = await run(jail, "ipcs -m -s -q | grep -c '^0x'", tmp_path)
        assert (made.output.splitlines()[-1], after.output, shell_of(jail).started) == ("3", "0", 1)

    async def test_sessions_apart(self, hostile_jails: Jails, tmp_path: Path) -> None:
        first, second = hostile_jails.jail(tmp_path), hostile_jails.jail(tmp_path)
        marker = tmp_path / "marker"
        async with trio.open_nursery() as nursery:
            nursery.start_soon(run, first, f"touch /dev/shm/first; echo up > {marker}; sleep 1000", tmp_path)
            await wait_for_file(marker)
            seen = await run(second, "ls -A /dev/shm", tmp_path)
            nursery.cancel_scope.cancel()
        assert (seen.exit_code, seen.output) == (0, "")
        assert shell_of(first).started == shell_of(second).started == 1


class TestShellState:
    """The working directory and environment carry over, and a missing one fails as with a jail per command."""

    async def test_cwd_and_environment_carry_over(self, hostile_jails: Jails, tmp_path: Path) -> None:
        jail = hostile_jails.jail(tmp_path)
        (tmp_path / "sub").mkdir()
        first = await run(jail, "cd sub && export CARRIED='a b'", tmp_path)
        assert first.shell is not None
        second = await run_foreground(
            'pwd; echo "$CARRIED"', cwd=first.shell.cwd, env=first.shell.env, config=FAST, jail=jail
        )
        assert second.output == f"{tmp_path / 'sub'}\na b"
        assert shell_of(jail).started == 1

    async def test_descriptors_and_signals_as_with_a_jail_per_command(self, hostile_jails: Jails, tmp_path: Path) -> None:
        """The command holds only its output, /dev/null and its state pipe; no signal is blocked (the init blocks
        SIGCHLD) and none ignored (Perl ignores SIGFPE) that a jail per command does not."""
        jail = hostile_jails.jail(tmp_path)
        probe = f"ls /proc/$$/fd > {tmp_path}/fds; tr '\\n' ' ' < {tmp_path}/fds; grep -E '^Sig(Ign|Blk)' /proc/$$/status"
        resident, alone = await run(jail, probe, tmp_path), await run(jail, probe, tmp_path, OFF)
        assert resident.output == alone.output and shell_of(jail).started == 1

    async def test_missing_cwd_as_with_a_jail_per_command(self, hostile_jails: Jails, tmp_path: Path) -> None:
        jail = hostile_jails.jail(tmp_path)
        await run(jail, "true", tmp_path)
        missing = tmp_path / "gone"
        resident = await run(jail, "true", missing)
        alone = await run(jail, "true", missing, OFF)
        assert resident == alone
        assert resident.cwd_missing and resident.error is not None and str(missing) in resident.error

    async def test_missing_shell_as_with_a_jail_per_command(self, hostile_jails: Jails, tmp_path: Path) -> None:
        jail = hostile_jails.jail(tmp_path)
        await run(jail, "true", tmp_path)
        config = attrs.evolve(FAST, shell="/nonexistent/shell")
        resident, alone = await run(jail, "true", tmp_path, config), await run(jail, "true", tmp_path, attrs.evolve(config, resident_shell=False))
        assert resident == alone and resident.exit_code == 127


class TestLargeEnvironment:
    """An environment larger than the socket takes runs the command in a jail of its own, intact."""

    async def test_runs(self, hostile_jails: Jails, tmp_path: Path) -> None:
        jail = hostile_jails.jail(tmp_path)
        # Three variables of 100 KB: each under the kernel's limit on one string, together over the socket's.
        env = build_shell_env(os.environ) | {f"LARGE{n}": "x" * 100_000 for n in range(3)}
        command = 'echo $((${#LARGE0} + ${#LARGE1} + ${#LARGE2})); readlink /proc/self/ns/pid'
        result = await run_foreground(command, cwd=str(tmp_path), env=env, config=FAST, jail=jail)
        size, namespace = result.output.splitlines()
        assert size == "300000" and result.shell is not None and len(result.shell.env["LARGE2"]) == 100_000
        assert namespace != os.readlink(f"/proc/{resident_pids(jail)[1]}/ns/pid")


class TestUnsendableCommand:
    """A command whose request cannot travel to the init (a NUL byte, a name holding ``=``, text with no bytes)
    fails as with a jail per command, and the resident lives on."""

    @pytest.mark.parametrize("extra", [{"BAD": "a\0b"}, {"A=B": "x"}, {"BAD": "\udcff\ud800"}], ids=["nul", "name", "text"])
    async def test_same_error_resident_kept(self, hostile_jails: Jails, tmp_path: Path, extra: dict[str, str]) -> None:
        jail = hostile_jails.jail(tmp_path)
        await run(jail, "true", tmp_path)
        _, init = resident_pids(jail)
        env = build_shell_env(os.environ) | extra
        errors = []
        for config in (FAST, OFF):
            with pytest.raises(ValueError) as raised:
                await run_foreground("echo ran", cwd=str(tmp_path), env=env, config=config, jail=jail)
            errors.append(repr(raised.value))
        assert errors[0] == errors[1]
        after = await run(jail, "echo alive", tmp_path)
        assert (after.output, shell_of(jail).started, resident_pids(jail)[1]) == ("alive", 1, init)


class TestNoPerl:
    """Where the daemon's user can run no Perl, every command gets a jail of its own, said once in the log."""

    async def test_jail_per_command(
        self, hostile_jails: Jails, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
    ) -> None:
        env = build_shell_env(os.environ)
        monkeypatch.setattr(resident, "_SYSTEM_PERL", str(tmp_path / "perl"))  # where the daemon looks for perl
        monkeypatch.setenv("PATH", str(tmp_path))
        resident._init_command.cache_clear()
        try:
            jail = hostile_jails.jail(tmp_path)
            with caplog.at_level(logging.WARNING, logger="tools.jail.resident"):
                outputs = [
                    (await run_foreground(NAMESPACE, cwd=str(tmp_path), env=env, config=FAST, jail=jail)).output
                    for _ in range(2)
                ]
        finally:
            resident._init_command.cache_clear()
        assert outputs[0] != outputs[1] and "pid:[" in outputs[0]
        assert shell_of(jail).started == 0
        assert caplog.text.count("could not start") == 1 and "no Perl" in caplog.text


class TestParallelCommands:
    """A session's second command while its first runs gets a jail of its own; both run."""

    async def test_both_run(self, hostile_jails: Jails, tmp_path: Path) -> None:
        jail = hostile_jails.jail(tmp_path)
        results: dict[str, ForegroundResult] = {}

        async def first() -> None:
            command = f"{NAMESPACE}; touch {tmp_path}/a; while [ ! -e {tmp_path}/b ]; do sleep 0.01; done"
            results["first"] = await run(jail, command, tmp_path)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(first)
            with trio.fail_after(10):
                while not (tmp_path / "a").exists():
                    await trio.sleep(0.01)
            results["second"] = await run(jail, f"{NAMESPACE}; touch {tmp_path}/b", tmp_path)
        _, init = resident_pids(jail)
        assert results["first"].output == os.readlink(f"/proc/{init}/ns/pid")
        assert results["second"].exit_code == 0 and results["second"].output != results["first"].output
        assert shell_of(jail).started == 1


class TestEnds:
    """The resident ends after its idle time, with its session and with the launcher, leaving no process."""

    async def test_idle_expiry(self, hostile_jails: Jails, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
        jail = hostile_jails.jail(tmp_path)
        config = attrs.evolve(FAST, resident_idle_seconds=0.2)
        await run(jail, "true", tmp_path, config)
        outer, init = resident_pids(jail)
        # Reaped by the launcher's thread while the session sits idle: no exit status waits in /proc.
        assert await wait_gone(init) and await wait_gone(outer)
        with caplog.at_level(logging.WARNING, logger="tools.jail.resident"):
            result = await run(jail, "echo again", tmp_path, config)
        assert (result.output, shell_of(jail).started) == ("again", 2)
        assert "ended" not in caplog.text

    async def test_session_close(self, hostile_jails: Jails, tmp_path: Path) -> None:
        jail = hostile_jails.jail(tmp_path)
        await run(jail, "true", tmp_path)
        outer, init = resident_pids(jail)
        await jail.aclose()
        assert gone(outer) and gone(init)
        # A closed session's shell starts no other resident: a command gets a jail of its own.
        assert (await run(jail, "echo still", tmp_path)).output == "still"
        assert shell_of(jail).started == 1

    async def test_launcher_close(self, tmp_path: Path) -> None:
        async with open_launcher(SandboxConfig()) as launcher:
            if not launcher.status.available:
                pytest.skip(f"no jail can run here: {launcher.status.error}")
            jail = SessionJail(policy_for(SandboxMode.WORKSPACE_WRITE, tmp_path), launcher)
            await run(jail, "true", tmp_path)
            outer, init = resident_pids(jail)
        assert gone(outer) and gone(init)
        assert not pid_alive(init)


class TestInheritedState:
    """What a command changes of its init from outside (limits, nice, CPUs) never reaches the next command."""

    async def test_soft_limit_put_back(self, hostile_jails: Jails, tmp_path: Path) -> None:
        jail = hostile_jails.jail(tmp_path)
        probe = "ulimit -Sn; ulimit -Hn; for tool in 'taskset -p' 'chrt -p'; do $tool $$ | cut -d: -f2; done; ionice"
        before = await run(jail, probe, tmp_path)
        changed = await run(
            jail, "prlimit --pid 1 --nofile=100: && taskset -p 1 1 >/dev/null && chrt -b -p 0 1 && ionice -c 3 -p 1 "
            "&& echo changed", tmp_path,
        )  # fmt: skip
        after = await run(jail, probe, tmp_path)
        assert changed.output == "changed"
        assert (after.output, shell_of(jail).started) == (before.output, 1)

    @pytest.mark.parametrize(
        "change", [
            "prlimit --pid 1 --nofile=100:100", "renice -n 5 -p 1 >/dev/null", "echo 500 > /proc/1/oom_score_adj",
            "chrt -i -p 0 1",
        ],
    )  # fmt: skip
    async def test_irreparable_change_retires_the_jail(self, hostile_jails: Jails, tmp_path: Path, change: str) -> None:
        jail = hostile_jails.jail(tmp_path)
        probe = "ulimit -Hn; nice; cat /proc/self/oom_score_adj; chrt -p $$ | cut -d: -f2; ionice"
        before = await run(jail, probe, tmp_path)
        outer, init = resident_pids(jail)
        changed = await run(jail, f"{change} && echo changed", tmp_path)
        after = await run(jail, probe, tmp_path)
        assert changed.output == "changed"
        assert (after.output, shell_of(jail).started) == (before.output, 2)
        assert gone(outer) and gone(init)


class TestThroughDaemonJails:
    """Through a daemon's jails, as root and as an ordinary user: the session's limits, the walls, its end."""

    async def test_as_root(self, tmp_path: Path) -> None:
        found = await exercise(tmp_path)
        if "unavailable" in found:
            pytest.skip(f"no jail can run here: {found['unavailable']}")
        assert found == EXPECTED

    def test_as_ordinary_user(self, work: Path) -> None:
        found, _ = run_as_nobody("tests.terminal.resident_probe", work)
        if "unavailable" in found:
            pytest.skip(f"no jail for an ordinary user here: {found['unavailable']}")
        assert found == EXPECTED


REFUSED = {
    "shared": "it shares the daemon's pid namespace",
    "shared, gone before the command": "it shares the daemon's pid namespace",
    "shared, gone with the command unread": "it shares the daemon's pid namespace",
    "ipc shared": "it shares the daemon's ipc namespace",
    "garbled": "a garbled namespace",
    "too few": "its pid, mnt and ipc namespaces were not all named",
    "missing": "its first request named no namespaces",
}


def refused_as_expected(found: dict[str, Any]) -> None:
    """Each case's init refused (exit 2, before its first command), said once in the log, no other was started,
    and every command ran in a jail of its own; nothing was left (processes, descriptors)."""
    assert found.pop("descriptors kept") is True
    assert set(found) == set(REFUSED)
    for case, why in REFUSED.items():
        line = (
            f"the resident shell could not start ([Errno 1] its init refused to run: {why}); "
            "the command runs in a jail of its own"
        )
        assert found[case] == {
            "a jail each": True, "none the host's": True, "residents tried": 1, "residents started": 1,
            "init exit": [2], "gone": [True], "log": [line],
        }, case  # fmt: skip


class TestNamespaceCheck:
    """The init refuses to run when it would share a namespace the jail unshares with the daemon (its sweep would
    reach the host), or cannot tell; the session's commands then run in a jail each. Its init runs in a real jail
    only: the daemon's seam names the jail's own namespaces as the daemon's."""

    async def test_as_root(self, tmp_path: Path) -> None:
        found = await refusals(tmp_path)
        if "unavailable" in found:
            pytest.skip(f"no jail can run here: {found['unavailable']}")
        refused_as_expected(found)

    def test_as_ordinary_user(self, work: Path) -> None:
        found, _ = run_as_nobody("tests.terminal.refusal_probe", work)
        if "unavailable" in found:
            pytest.skip(f"no jail for an ordinary user here: {found['unavailable']}")
        refused_as_expected(found)

    def test_request_names_what_the_jail_unshares(self, tmp_path: Path) -> None:
        """The daemon's own pid, mount, IPC, UTS and user namespaces, and its network one where the jail has its own."""
        policy = policy_for(SandboxMode.WORKSPACE_WRITE, tmp_path)
        ours = {kind: os.readlink(f"/proc/self/ns/{kind}") for kind in ("pid", "mnt", "ipc", "uts", "user", "net")}
        unshared = ["pid", "mnt", "ipc", "uts", "user"]
        for network, kinds in ((True, unshared), (False, [*unshared, "net"])):
            request = resident.namespaces_request(attrs.evolve(policy, network=network))
            assert request.split(b"\0") == [b"namespaces", *(os.fsencode(ours[kind]) for kind in kinds)]
