"""The jail's life with the daemon's: a daemon killed with -9 takes every jailed process with it and its
restart removes what the dead one left; a session's resident jail ends with the session; a daemon whose
jail cannot run says so and runs nothing unjailed."""

from __future__ import annotations

import json
import os
import signal
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from messages import control as c
from tests.daemon.helpers import DaemonProcess, ScriptedProviderProcess, run_cli
from tests.daemon.jailed import JailedDaemon, output_of, processes_with, wait_until
from tests.jail.helpers import PidNamespace


@pytest.fixture
def provider(provider: ScriptedProviderProcess) -> ScriptedProviderProcess:
    """The module's scripted provider, emptied of what an earlier test left."""
    provider.reset()
    return provider


def _pid_namespace(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return None


class TestKill9:
    """kill -9 of the daemon leaves no jailed process alive, and the next start cleans up after it."""

    def test_no_survivors(self, provider: ScriptedProviderProcess) -> None:
        """A background command, a foreground one and a setsid grandchild all die with the daemon."""
        jailed = JailedDaemon().start()
        # Markers of this run's own: the processes are looked for machine-wide.
        marker, grandchild = f"hx-marker-{uuid.uuid4().hex}", f"sleep 302.{uuid.uuid4().int % 10**6:06d}"
        try:
            background = jailed.create_session(provider)
            result = jailed.tool_turn(
                provider, background, "terminal", {"command": f"sleep 301 # {marker}-bg", "background": True}
            )
            assert "error" not in json.loads(result) or json.loads(result)["error"] is None, result
            foreground = jailed.create_session(provider)
            provider.push({"tool_calls": [{"id": "f1", "name": "terminal", "arguments": {
                "command": f"setsid {grandchild} & sleep 303 # {marker}-fg", "timeout": 300}}]})
            with jailed.daemon.client() as client:
                client.request(c.SendMessage(client.next_id(), foreground, "run something long"))
            wait_until(lambda: processes_with(f"{marker}-bg") and processes_with(f"{marker}-fg"), 30, "the commands")
            wait_until(lambda: processes_with(grandchild), 30, "the setsid grandchild")
            names = {_pid_namespace(pid) for pid in processes_with(marker)} - {None, _pid_namespace(os.getpid())}
            assert len(names) == 2, "each command should run in a PID namespace of its own"
            namespaces = [PidNamespace(name) for name in names if name is not None]
            leftover = jailed.runtime.session_dir(foreground)
            jailed.daemon.signal(signal.SIGKILL)
            jailed.daemon.wait(10)
            # A zombie is dead: the jail's init, orphaned by the daemon's death, waits for the machine's init to
            # reap it, which on some machines (CI's) happens only every few seconds.
            wait_until(lambda: not any(ns.alive() for ns in namespaces), 10, "every jailed process to die")
            for namespace in namespaces:
                namespace.close()
            assert processes_with(marker) == [] and processes_with(grandchild) == []
            assert os.path.isdir(leftover)
            jailed.daemon.stop(keep_runtime=True)
            provider.reset()
            restarted = DaemonProcess(jailed.home)
            restarted.extra_env = jailed.daemon.extra_env
            jailed.daemon = restarted
            jailed.start()
            assert not os.path.exists(leftover)
            assert "leftovers of an earlier run" in jailed.daemon.log()
        finally:
            jailed.stop()


class TestResidentShell:
    """In the real daemon, a session's foreground commands share one jail, which ends with the session."""

    def test_shared_then_gone_with_the_session(self, provider: ScriptedProviderProcess) -> None:
        jailed = JailedDaemon().start()
        try:
            session = jailed.create_session(provider)
            command = {"command": "readlink /proc/self/ns/pid"}
            first, second = (output_of(jailed.tool_turn(provider, session, "terminal", command)) for _ in range(2))
            assert first == second and first.startswith("pid:[")
            with PidNamespace(first) as namespace:
                assert namespace.alive()  # its init waits for the next command
                with jailed.daemon.client() as client:
                    client.request(c.DeleteSession(client.next_id(), session))
                wait_until(lambda: not namespace.alive(), 10, "the session's resident jail to end")
        finally:
            jailed.stop()


FAILING_BWRAP = "#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n"


@pytest.fixture
def broken_jail(tmp_path: Path) -> Iterator[JailedDaemon]:
    """A daemon whose sandbox.bwrap is a script that always fails, so no jail can run."""
    script = tmp_path / "bwrap"
    script.write_text(FAILING_BWRAP)
    script.chmod(0o755)
    jailed = JailedDaemon(f"sandbox:\n  bwrap: {script}\n").start()
    try:
        yield jailed
    finally:
        jailed.stop()


class TestNoJail:
    """Where no jail can run, the daemon says so and tools that start processes refuse, naming the key."""

    def test_said_at_start_and_in_status(self, broken_jail: JailedDaemon) -> None:
        """An error line with the failed step at start; status --json shows available false and advice."""
        log = broken_jail.daemon.log()
        assert "ERROR" in log and "no jail can run" in log
        sandbox = json.loads(run_cli(broken_jail.home, "status", "--json").stdout)["sandbox"]
        assert sandbox["available"] is False and sandbox["failed_step"] and sandbox["advice"], sandbox
        assert "NO JAIL CAN RUN" in run_cli(broken_jail.home, "status").stdout

    def test_tools_refuse(self, broken_jail: JailedDaemon, provider: ScriptedProviderProcess) -> None:
        """terminal and execute_code answer an error naming sandbox.mode; nothing they were given ran."""
        session = broken_jail.create_session(provider)
        marker = broken_jail.workspace / "ran-unjailed"
        for tool, args in (
            ("terminal", {"command": f"touch {marker}"}),
            ("terminal", {"command": f"touch {marker}", "background": True}),
            ("execute_code", {"code": f"open({str(marker)!r}, 'w').close()"}),
        ):
            text = output_of(broken_jail.tool_turn(provider, session, tool, args))
            assert "sandbox.mode" in text, (tool, text)
            assert not marker.exists(), f"{tool} ran without a jail"

    def test_full_access_still_runs(self, broken_jail: JailedDaemon, provider: ScriptedProviderProcess) -> None:
        """A session the user chose to run with full access is not jailed, so it still works."""
        session = broken_jail.create_session(provider, sandbox="full-access")
        result = json.loads(broken_jail.tool_turn(provider, session, "terminal", {"command": "echo unjailed-ok"}))
        assert "unjailed-ok" in result["output"], result
