"""The second wall in a real daemon: another daemon's control socket refuses a jailed process, a session
at its limits gets a clear tool error while the daemon goes on, ``status`` says how the jail holds, and
``kill -9`` of the daemon leaves nothing of a full-access session or of an MCP server's children."""

from __future__ import annotations

import json
import shlex
import shutil
import signal
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from messages import control as c
from tests.daemon.helpers import ScriptedProviderProcess, run_cli
from tests.daemon.jailed import TURN_TIMEOUT, JailedDaemon, output_of, processes_with, wait_until
from tests.mcp.helpers import TOY, tag

LIMITED = "sandbox:\n  limits: {pids: 32, memory_mb: 64}\nterminal:\n  timeout: 60\n"

# Another daemon's control socket, found on disk: connect, say something, print what came back.
_KNOCK = (
    "import socket, sys\n"
    "s = socket.socket(socket.AF_UNIX)\n"
    "s.connect(sys.argv[1])\n"
    "s.settimeout(20)\n"
    "try:\n"
    "    s.sendall(b'{}\\n')\n"
    "    print('answered' if s.recv(4096) else 'closed')\n"
    "except (BrokenPipeError, ConnectionResetError):\n"
    "    print('closed')\n"
)
_FORK_UNTIL_REFUSED = "perl -e 'for (1..80) { my $p = fork(); exit 1 unless defined $p; if (!$p) { sleep 60; exit 0 } }'"


@pytest.fixture
def provider(provider: ScriptedProviderProcess) -> ScriptedProviderProcess:
    """The module's scripted provider, emptied of what an earlier test left."""
    provider.reset()
    return provider


@pytest.fixture
def limited() -> Iterator[JailedDaemon]:
    """A daemon whose sessions may run 32 processes in 64 MB (by control groups: skipped where it has none)."""
    running = JailedDaemon(LIMITED).start()
    try:
        sandbox = running.status().sandbox
        assert sandbox is not None
        if not all(sandbox.limits.get(name, "").startswith("cgroup") for name in ("pids", "memory_mb")):
            pytest.skip(f"this machine gives the daemon no control groups: {sandbox.limits}")
        yield running
    finally:
        running.stop()


class TestAnotherDaemon:
    """A jailed process that finds another daemon's control socket is refused by it, before any frame."""

    def test_refused(self, provider: ScriptedProviderProcess) -> None:
        attacker, target = JailedDaemon().start(), JailedDaemon().start()
        try:
            session = attacker.create_session(provider)
            command = shlex.join([sys.executable, "-c", _KNOCK, str(target.daemon.paths.socket)])
            result = attacker.tool_turn(provider, session, "terminal", {"command": command})
            assert output_of(result).strip() == "closed", result
            assert "refused a control connection from a jailed process" in target.daemon.log()
            # The operator's own client still gets in.
            assert target.status().sandbox is not None
        finally:
            attacker.stop()
            target.stop()


class TestLimits:
    """A session at a limit gets a tool error naming it; the daemon and its other sessions go on."""

    def test_process_limit(self, limited: JailedDaemon, provider: ScriptedProviderProcess) -> None:
        session = limited.create_session(provider)
        result = json.loads(limited.tool_turn(provider, session, "terminal", {"command": _FORK_UNTIL_REFUSED}))
        assert result["exit_code"] != 0
        assert "The session's process limit (32) was reached" in result["error"], result
        other = limited.create_session(provider)
        assert output_of(limited.tool_turn(provider, other, "terminal", {"command": "echo fine"})).strip() == "fine"

    def test_memory_limit_in_a_script(self, limited: JailedDaemon, provider: ScriptedProviderProcess) -> None:
        session = limited.create_session(provider)
        code = "x = bytearray(256 * 1024 * 1024)\nprint('allocated')"
        result = limited.tool_turn(provider, session, "execute_code", {"code": code})
        assert "the session's memory limit (64 MB) was reached" in result, result
        assert "allocated" not in output_of(result)

    def test_status_says_how(self, limited: JailedDaemon) -> None:
        sandbox = limited.status().sandbox
        assert sandbox is not None and sandbox.available and sandbox.seccomp
        assert set(sandbox.limits) == {"pids", "memory_mb", "cpu_weight", "tmp_mb", "shm_mb"}
        text = run_cli(limited.home, "status").stdout
        assert "no capabilities, system-call filter on" in text
        assert "session limits: pids by " in text


class TestKill9:
    """kill -9 of the daemon leaves no process of a full-access session, nor any an MCP server started."""

    def test_full_access_session(self, provider: ScriptedProviderProcess) -> None:
        jailed = JailedDaemon().start()
        try:
            session = jailed.create_session(provider, sandbox="full-access")
            # Markers of this run's own: the processes are looked for machine-wide.
            grandchild, marker = f"sleep 311.{uuid.uuid4().int % 10**6:06d}", f"hx-open-bg-{uuid.uuid4().hex}"
            command = f"setsid {grandchild} & sleep 312 # {marker}"
            result = jailed.tool_turn(provider, session, "terminal", {"command": command, "background": True})
            assert json.loads(result).get("error") is None, result
            wait_until(lambda: processes_with(grandchild) and processes_with(marker), 30, "the commands")
            jailed.daemon.signal(signal.SIGKILL)
            jailed.daemon.wait(10)
            wait_until(lambda: not processes_with(grandchild) and not processes_with(marker), 10, "them to die")
        finally:
            jailed.stop()

    def test_mcp_server_children(self, provider: ScriptedProviderProcess) -> None:
        marker = tag()
        child = f"setsid bash -c 'sleep 313; : {marker}' & exec {sys.executable} {TOY} stdio {marker}"
        config = f"mcp_servers:\n  toy: {{command: bash, args: ['-c', {json.dumps(child)}], connect_timeout: 20}}\n"
        jailed = JailedDaemon(config).start()
        try:
            wait_until(lambda: _server_state(jailed) == "ready", TURN_TIMEOUT, "the server to be ready")
            wait_until(lambda: processes_with(f"sleep 313; : {marker}"), TURN_TIMEOUT, "the server's child")
            jailed.daemon.signal(signal.SIGKILL)
            jailed.daemon.wait(10)
            wait_until(lambda: processes_with(marker) == [], 10, f"the server's child to die: {_described(marker)}")
        finally:
            jailed.stop()



class TestJailedMcpServer:
    """mcp_servers.NAME.sandbox jails a stdio server like a session: it serves, and holds no capability."""

    def test_read_only_server(self, provider: ScriptedProviderProcess) -> None:
        marker = tag()
        jailed = JailedDaemon()
        # In its working directory: a checkout under the host's /tmp is out of a jail's sight.
        toy = shutil.copy(TOY, jailed.workspace / "toy_server.py")
        (jailed.home / "config.yaml").write_text(
            f"mcp_servers:\n  toy: {{command: {sys.executable}, args: [{toy}, stdio, '{marker}'], "
            f"cwd: {jailed.workspace}, connect_timeout: 20, sandbox: read-only}}\n"
        )
        jailed.start()
        try:
            wait_until(lambda: _server_state(jailed) == "ready", TURN_TIMEOUT, "the server to be ready")
            server = next(pid for pid in processes_with(marker) if _command_line(pid).startswith(sys.executable))
            assert _status_field(server, "CapEff") == "0000000000000000"
            assert _status_field(server, "Seccomp") == "2"
        finally:
            jailed.stop()


def _command_line(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")


def _status_field(pid: int, name: str) -> str:
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    return next(line.split(":", 1)[1].strip() for line in lines if line.startswith(name + ":"))


def _described(marker: str) -> str:
    """What is left of the processes with ``marker``: pid, parent, state and command line, for a failure."""
    found = []
    for pid in processes_with(marker):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        found.append(f"{pid} (parent {stat[1]}, {stat[0]}): {cmdline[:160]}")
    return "; ".join(found) or "none"


def _server_state(jailed: JailedDaemon) -> str | None:
    with jailed.daemon.client() as client:
        servers = client.request(c.McpServers(client.next_id())).servers
    return next((server.state for server in servers if server.name == "toy"), None)
