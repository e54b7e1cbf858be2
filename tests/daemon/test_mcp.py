"""MCP servers in a real daemon: start, status, tree, a session's tool call, reload, and the end of the daemon."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from messages import control as c
from tests.daemon.helpers import DaemonProcess, ScriptedProviderProcess, run_cli
from tests.mcp.helpers import TOY, free_port, processes_with, tag


def _config(marker: str, extra: str = "") -> str:
    return (
        "mcp_servers:\n"
        f"  toy: {{command: {sys.executable}, args: [{TOY}, stdio, '{marker}'], connect_timeout: 20}}\n"
        "  dead: {url: 'http://127.0.0.1:9/mcp', connect_timeout: 1}\n"
        "  bad: {command: x, timeout: -1}\n"
        "  later: {command: x, enabled: false}\n" + extra
    )


def _write_config(home: Path, text: str) -> None:
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    (home / "config.yaml").write_text(text, encoding="utf-8")


def _statuses(daemon: DaemonProcess) -> dict[str, c.McpServerStatus]:
    with daemon.client() as client:
        reply: c.McpReply = client.request(c.McpServers(client.next_id()))
    return {server.name: server for server in reply.servers}


def _wait_ready(daemon: DaemonProcess, name: str, timeout: float = 30.0) -> dict[str, c.McpServerStatus]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        statuses = _statuses(daemon)
        # Right after start the daemon may answer before its MCP supervisor has listed the server.
        server = statuses.get(name)
        if server is not None and server.state == "ready":
            return statuses
        time.sleep(0.05)
    raise AssertionError(f"{name} never became ready: {_statuses(daemon)}\n{daemon.log()}")


@pytest.fixture
def marker() -> Iterator[str]:
    value = tag()
    yield value
    assert processes_with(value) == [], "an MCP server process outlived the daemon"


class TestDaemon:
    """The daemon starts at once whatever its servers do, shows their states, and its sessions call MCP tools."""

    def test_states_tree_and_a_session_calling_a_tool(
        self, home: Path, marker: str, provider: ScriptedProviderProcess
    ) -> None:
        _write_config(home, _config(marker))
        daemon = DaemonProcess(home).start()
        try:
            statuses = _wait_ready(daemon, "toy")
            assert statuses["toy"].tools == 8
            assert statuses["bad"].state == "failed"
            assert statuses["bad"].error == "mcp_servers.bad.timeout must be a number > 0, got -1"
            assert statuses["later"].state == "disabled"
            status = json.loads(run_cli(home, "status", "--json").stdout)
            assert [server["name"] for server in status["mcp"]] == ["toy", "dead", "bad", "later"]
            tree = run_cli(home, "tree", "mcp").stdout
            assert "server:toy [mcp-server]" in tree and "ready: 8 tools" in tree
            # A session calls an MCP tool through the one tool path; the model gets its result.
            provider.reset()
            provider.push(
                {"tool_calls": [{"id": "call_mcp", "name": "mcp_toy_echo", "arguments": {"text": "via mcp"}}]},
                {"text": "The server echoed."},
            )
            result = run_cli(home, "chat", "-q", "echo something", *provider.chat_flags(), timeout=90)
            assert result.returncode == 0, result.stderr
            assert "The server echoed." in result.stdout
            last = provider.requests()[-1]["body"]
            tool_messages = [m for m in last["messages"] if m.get("role") == "tool"]
            assert json.loads(tool_messages[-1]["content"]) == {"result": "via mcp"}
            assert "mcp_toy_echo" in {t["function"]["name"] for t in last["tools"]}
        finally:
            daemon.stop()

    def test_reload_reads_the_config_again(self, home: Path, marker: str) -> None:
        _write_config(home, _config(marker))
        daemon = DaemonProcess(home).start()
        try:
            _wait_ready(daemon, "toy")
            (home / "config.yaml").write_text(
                "mcp_servers:\n"
                f"  other: {{command: {sys.executable}, args: [{TOY}, stdio, '{marker}'], connect_timeout: 20}}\n",
                encoding="utf-8",
            )
            with daemon.client() as client:
                reply: c.McpReply = client.request(c.ReloadMcp(client.next_id(), wait_seconds=30))
            assert [(s.name, s.state, s.tools) for s in reply.servers] == [("other", "ready", 8)]
        finally:
            daemon.stop()

    def test_kill_9_leaves_no_server(self, home: Path, marker: str) -> None:
        _write_config(home, _config(marker))
        daemon = DaemonProcess(home).start()
        try:
            _wait_ready(daemon, "toy")
            assert processes_with(marker)
            daemon.signal(signal.SIGKILL)
            daemon.wait(10)
            deadline = time.monotonic() + 5
            while processes_with(marker) and time.monotonic() < deadline:
                time.sleep(0.02)
            assert processes_with(marker) == []
        finally:
            daemon.stop()

    def test_mcp_commands(self, home: Path, marker: str) -> None:
        _write_config(home, _config(marker))
        result = run_cli(home, "mcp", "test", "toy", "--json", timeout=60)
        found = json.loads(result.stdout)
        assert (result.returncode, found["ok"], len(found["tools"])) == (0, True, 8)
        assert found["connect_ms"] > 0
        result = run_cli(home, "mcp", "test", "dead")
        assert result.returncode == 1
        assert re.search(r"dead: FAILED after \d+ ms over http: ConnectError", result.stdout)
        listed = json.loads(run_cli(home, "mcp", "list", "--json").stdout)
        assert listed["daemon_running"] is False
        assert [(s["name"], s["state"]) for s in listed["servers"]] == [
            ("toy", "not running"), ("dead", "not running"), ("bad", "invalid"), ("later", "disabled"),
        ]


class TestWhatListSays:
    """mcp list follows an HTTP server that died and servers config.yaml gained since the start, unasked."""

    def test_a_dead_http_server_is_not_ready(self, home: Path, marker: str) -> None:
        port = free_port()
        server = subprocess.Popen(
            [sys.executable, TOY, "http", str(port), marker], stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        try:
            _write_config(home, f"mcp_servers:\n  web: {{url: 'http://127.0.0.1:{port}/mcp', connect_timeout: 60}}\n")
            daemon = DaemonProcess(home).start()
            try:
                _wait_ready(daemon, "web")
                server.kill()
                server.wait(10)
                # No tool is called: the daemon's own health check must notice (it took 30 s and more).
                deadline = time.monotonic() + 20
                while _statuses(daemon)["web"].state == "ready":
                    assert time.monotonic() < deadline, "the dead server stayed ready"
                    time.sleep(0.1)
                listed = run_cli(home, "mcp", "list").stdout
                assert "web" in listed and "ready" not in listed, listed
            finally:
                daemon.stop()
        finally:
            server.kill()
            server.wait(10)

    def test_a_server_added_since_the_start(self, home: Path, marker: str) -> None:
        _write_config(home, "mcp_servers:\n  later: {command: x, enabled: false}\n")
        daemon = DaemonProcess(home).start()
        try:
            (home / "config.yaml").write_text(
                "mcp_servers:\n"
                f"  added: {{command: {sys.executable}, args: [{TOY}, stdio, '{marker}']}}\n", encoding="utf-8",
            )
            listed = json.loads(run_cli(home, "mcp", "list", "--json").stdout)
            by_name = {server["name"]: server for server in listed["servers"]}
            assert by_name["added"]["state"] == "not started"
            assert "added to config.yaml after the daemon read it" in by_name["added"]["error"]
            text = run_cli(home, "mcp", "list").stdout
            assert "added  not started" in text and "/reload-mcp" in text, text
        finally:
            daemon.stop()


class TestReloadCommand:
    """/reload-mcp in attach asks first, then reloads and rebuilds the session's tool list."""

    def test_confirm_then_reload(self, home: Path, marker: str, provider: ScriptedProviderProcess) -> None:
        from tests.client.test_screen import open_chat

        _write_config(home, _config(marker))
        daemon = DaemonProcess(home).start()
        try:
            _wait_ready(daemon, "toy")
            provider.reset()
            with open_chat(daemon, provider, columns=160, lines=40) as terminal:
                terminal.type("/reload-mcp\r")
                terminal.wait_for(lambda t: "prompt cache starts over. [y/N]" in t, what="the question")
                terminal.type("n\r")
                terminal.wait_for(lambda t: "MCP servers not reloaded" in t, what="the refusal")
                terminal.type("/reload-mcp\r")
                terminal.wait_for(lambda t: t.count("[y/N]") == 2, what="the second question")
                terminal.type("y\r")
                terminal.wait_for(lambda t: "toy: ready - 8 tools" in t, what="the reload", timeout=60)
                terminal.wait_for(lambda t: "tools reset:" in t and "mcp_toy_echo" in t, what="the new tool list")
                text = terminal.text()
                assert "bad: failed - mcp_servers.bad.timeout must be a number > 0, got -1" in text
                terminal.type("\x04")
                assert terminal.wait_exit() == 0
        finally:
            daemon.stop()
