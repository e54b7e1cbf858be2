"""From inside one session of a real daemon, through terminal and execute_code: the control socket, the
daemon's environment, another session's sandbox, the home's files and the user's keys are out of reach,
nothing outside the writable roots can be written, and the victim session goes on untouched."""

from __future__ import annotations

import glob
import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from messages import control as c
from tests.daemon.helpers import ScriptedProviderProcess, run_cli
from tests.daemon.jailed import (
    DAEMON_SECRET,
    DOTENV_SECRET,
    SSH_KEY_TEXT,
    JailedDaemon,
    output_of,
    wait_until,
)

SECRETS = (DAEMON_SECRET, DOTENV_SECRET, SSH_KEY_TEXT)

CONFIG = "sandbox:\n  mode: workspace-write\n  max_mode: workspace-write\nterminal:\n  timeout: 40\n"


@pytest.fixture(scope="module")
def jailed() -> Iterator[JailedDaemon]:
    """One jailed daemon for this module's attacks (each test works in sessions of its own)."""
    running = JailedDaemon(CONFIG).start()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def provider(provider: ScriptedProviderProcess) -> ScriptedProviderProcess:
    """The module's scripted provider, emptied of what an earlier test left."""
    provider.reset()
    return provider


@contextmanager
def victim_running(jailed: JailedDaemon, provider: ScriptedProviderProcess) -> Iterator[tuple[str, str]]:
    """Another session in the middle of an execute_code run: (its id, its sandbox socket on the host).

    Afterwards its run is interrupted and the victim must still take and finish a turn of its own.
    """
    victim = jailed.create_session(provider)
    provider.push({"tool_calls": [{"id": "v1", "name": "execute_code", "arguments": {"code": "import time\ntime.sleep(120)"}}]})
    with jailed.daemon.client() as client:
        client.request(c.SendMessage(client.next_id(), victim, "victim: run a long script"))
    pattern = os.path.join(jailed.runtime.session_dir(victim), "hx-sbx-*", "rpc.sock")
    wait_until(lambda: glob.glob(pattern), 30, "the victim's sandbox socket")
    [socket_path] = glob.glob(pattern)
    yield victim, socket_path
    assert os.path.exists(socket_path), "the victim's sandbox was disturbed"
    with jailed.daemon.client() as client:
        client.request(c.InterruptSession(client.next_id(), victim))
    wait_until(lambda: not os.path.exists(socket_path), 30, "the victim's interrupted run to end")
    provider.push({"text": "victim still fine"})
    with jailed.daemon.client() as client:
        client.request(c.Attach(client.next_id(), victim, None))
        client.request(c.SendMessage(client.next_id(), victim, "victim: are you there?"))
        while type(event := client.receive()).__name__ != "TurnFinished":
            pass
    assert event.final_text == "victim still fine"
    assert len(jailed.tool_results(victim)) == 1, "a tool ran as the victim"


def _targets(jailed: JailedDaemon, victim: str, victim_socket: str) -> dict[str, str]:
    return {
        "CONTROL": str(jailed.daemon.paths.socket),
        "PID": str(jailed.pid),
        "VICTIM_DIR": jailed.runtime.session_dir(victim),
        "VICTIM_SOCK": victim_socket,
        "DOTENV": str(jailed.home / ".env"),
        "STATE_DB": str(jailed.home / "state.db"),
        "SSH_KEY": str(jailed.user_home / ".ssh" / "id_ed25519"),
        "SOUL": str(jailed.home / "SOUL.md"),
        "OUTSIDE": str(jailed.outside / "pwned"),
    }


TERMINAL_ATTACK = """\
attempt() {{ name=$1; shift; if out=$("$@" 2>&1); then echo "LEAK:$name $out"; else echo "REFUSED:$name $out"; fi; }}
connect() {{ {python} -c "import socket,sys; socket.socket(socket.AF_UNIX).connect(sys.argv[1])" "$1"; }}
attempt control connect {CONTROL}
attempt environ cat /proc/{PID}/environ
attempt list_victim ls {VICTIM_DIR}
attempt victim_socket connect {VICTIM_SOCK}
attempt dotenv cat {DOTENV}
attempt state_db head -c 64 {STATE_DB}
attempt ssh_key cat {SSH_KEY}
attempt write_home sh -c 'echo pwned > {SOUL}'
attempt write_outside sh -c 'echo pwned > {OUTSIDE}'
"""

SCRIPT_ATTACK = """\
import json, os, socket
targets = json.loads({targets!r})
def connect(path):
    socket.socket(socket.AF_UNIX).connect(path)
def read(path):
    with open(path, "rb") as file:
        return file.read(4096).decode(errors="replace")
def write(path):
    with open(path, "w") as file:
        file.write("pwned")
attempts = {{
    "control": lambda: connect(targets["CONTROL"]),
    "environ": lambda: read(f"/proc/{{targets['PID']}}/environ"),
    "list_victim": lambda: os.listdir(targets["VICTIM_DIR"]),
    "victim_socket": lambda: connect(targets["VICTIM_SOCK"]),
    "dotenv": lambda: read(targets["DOTENV"]),
    "state_db": lambda: read(targets["STATE_DB"]),
    "ssh_key": lambda: read(targets["SSH_KEY"]),
    "write_home": lambda: write(targets["SOUL"]),
    "write_outside": lambda: write(targets["OUTSIDE"]),
}}
for name, attempt in attempts.items():
    try:
        print(f"LEAK:{{name}} {{attempt()}}")
    except OSError as exc:
        print(f"REFUSED:{{name}} {{type(exc).__name__}}: {{exc.strerror}}")
"""

ATTEMPTS = ("control", "environ", "list_victim", "victim_socket", "dotenv", "state_db", "ssh_key", "write_home", "write_outside")


def _assert_all_refused(jailed: JailedDaemon, output: str) -> None:
    refused = {line.split()[0].removeprefix("REFUSED:") for line in output.splitlines() if line.startswith("REFUSED:")}
    assert refused == set(ATTEMPTS), output
    for secret in SECRETS:
        assert secret not in output
    assert not (jailed.home / "SOUL.md").exists()
    assert not (jailed.outside / "pwned").exists()


class TestAttacksThroughTerminal:
    """A terminal command of one session reaches nothing of the daemon's or of another session's."""

    def test_every_attempt_refused(self, jailed: JailedDaemon, provider: ScriptedProviderProcess) -> None:
        """Each attempt fails with the system's own error (no such file, read-only file system)."""
        attacker = jailed.create_session(provider)
        with victim_running(jailed, provider) as (victim, victim_socket):
            command = TERMINAL_ATTACK.format(python=sys.executable, **_targets(jailed, victim, victim_socket))
            output = output_of(jailed.tool_turn(provider, attacker, "terminal", {"command": command}))
        _assert_all_refused(jailed, output)
        assert "Read-only file system" in output or "No such file or directory" in output


class TestAttacksThroughExecuteCode:
    """An execute_code script of one session reaches nothing of the daemon's or of another session's."""

    def test_every_attempt_refused(self, jailed: JailedDaemon, provider: ScriptedProviderProcess) -> None:
        """Each attempt raises an OSError in the script; the script's own RPC still works."""
        attacker = jailed.create_session(provider)
        with victim_running(jailed, provider) as (victim, victim_socket):
            code = SCRIPT_ATTACK.format(targets=json.dumps(_targets(jailed, victim, victim_socket)))
            code += "from hermes_tools import terminal\nprint('RPC', terminal('echo rpc-works')['output'])\n"
            result = jailed.tool_turn(provider, attacker, "execute_code", {"code": code})
        output = output_of(result)
        _assert_all_refused(jailed, output)
        assert "RPC rpc-works" in output


class TestWritableRoots:
    """Writes land only in the writable roots of the session's mode."""

    def test_read_only_session(self, jailed: JailedDaemon, provider: ScriptedProviderProcess) -> None:
        """A read-only session cannot write its cwd; its private /tmp it can."""
        session = jailed.create_session(provider, sandbox="read-only")
        command = "echo x > ro-attempt; echo status=$?; echo y > /tmp/scratch && cat /tmp/scratch"
        output = output_of(jailed.tool_turn(provider, session, "terminal", {"command": command}))
        assert "Read-only file system" in output and "status=1" in output and "\ny" in output, output
        assert not (jailed.workspace / "ro-attempt").exists()

    def test_workspace_write_session(self, jailed: JailedDaemon, provider: ScriptedProviderProcess) -> None:
        """A workspace-write session writes its cwd (the control for the test above)."""
        session = jailed.create_session(provider)
        output_of(jailed.tool_turn(provider, session, "terminal", {"command": "echo written > ww-file"}))
        assert (jailed.workspace / "ww-file").read_text() == "written\n"


class TestLongCommand:
    """A jailed command outlives the worker thread that started it (bwrap's --die-with-parent trap)."""

    def test_runs_past_15_seconds(self, jailed: JailedDaemon, provider: ScriptedProviderProcess) -> None:
        """`sleep 16` finishes and reports, rather than dying when an idle worker thread exits."""
        session = jailed.create_session(provider)
        result = json.loads(jailed.tool_turn(provider, session, "terminal", {"command": "sleep 16; echo survived"}))
        assert result["exit_code"] == 0 and "survived" in result["output"], result


class TestModeLimits:
    """A session never gets a wider mode than sandbox.max_mode."""

    def test_chat_sandbox_refused(self, jailed: JailedDaemon, provider: ScriptedProviderProcess) -> None:
        """chat --sandbox full-access exits 2 with a message naming sandbox.max_mode; no session is made."""
        before = json.loads(run_cli(jailed.home, "sessions", "list", "--json").stdout)["sessions"]
        result = run_cli(jailed.home, "chat", "-q", "hi", "--sandbox", "full-access", *provider.chat_flags())
        assert result.returncode == 2, result
        assert "sandbox.max_mode: workspace-write" in result.stderr
        after = json.loads(run_cli(jailed.home, "sessions", "list", "--json").stdout)["sessions"]
        assert len(after) == len(before)


class TestStatus:
    """status shows the jail the preflight found."""

    def test_status_json(self, jailed: JailedDaemon) -> None:
        """status --json: the modes, an available jail, its bwrap; the text form says the same."""
        shown = json.loads(run_cli(jailed.home, "status", "--json").stdout)
        sandbox = shown["sandbox"]
        assert (sandbox["mode"], sandbox["max_mode"], sandbox["available"]) == ("workspace-write", "workspace-write", True)
        assert sandbox["bwrap"] and os.path.isabs(sandbox["bwrap"]) and sandbox["failed_step"] is None
        text = run_cli(jailed.home, "status").stdout
        assert "sandbox workspace-write (at most workspace-write); jail: bwrap" in text
