"""The inspection commands through the real CLI against a real daemon."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from messages import control as c
from tests.daemon.helpers import REPO, DaemonProcess, environment, run_cli

NODE_KEYS = {
    "path", "name", "kind", "state", "activity", "mailbox_used", "mailbox_capacity", "restarts",
    "age_seconds", "budget", "cancel_reason", "last_error", "details", "children",
}


def _walk(node: dict) -> list[dict]:
    out = [node]
    for child in node["children"]:
        out.extend(_walk(child))
    return out


class TestTree:
    """`tree` shows the live actor tree."""

    def test_tree_json_schema(self, shared_daemon: DaemonProcess) -> None:
        """Every node has the documented keys; the daemon's parts and our own connection are there."""
        result = run_cli(shared_daemon.home, "tree", "--json")
        assert result.returncode == 0, result.stderr
        data = json.loads(result.stdout)
        assert isinstance(data["now"], float)
        nodes = _walk(data["tree"])
        for node in nodes:
            assert set(node) == NODE_KEYS
            assert node["state"] in {"starting", "running", "idle", "busy", "stopping", "stopped", "failed", "restarting"}
            assert node["age_seconds"] >= 0
        by_path = {node["path"]: node for node in nodes}
        assert by_path[""]["kind"] == "supervisor"
        assert by_path["store"]["kind"] == "store"
        assert by_path["control"]["kind"] == "control"
        connections = [n for n in nodes if n["kind"] == "connection"]
        assert len(connections) == 1 and connections[0]["activity"] == "Tree"
        assert connections[0]["path"].startswith("control/conn:")

    def test_tree_text(self, shared_daemon: DaemonProcess) -> None:
        """The text tree draws one actor a line under the root."""
        result = run_cli(shared_daemon.home, "tree")
        assert result.returncode == 0
        lines = result.stdout.splitlines()
        assert lines[0].startswith("(root) [supervisor]")
        assert any(line.startswith("├── store [store]") for line in lines)
        assert any("conn:" in line and "[connection]" in line for line in lines)

    def test_subtree(self, shared_daemon: DaemonProcess) -> None:
        """`tree PATH` shows only that subtree."""
        data = json.loads(run_cli(shared_daemon.home, "tree", "control", "--json").stdout)
        assert data["tree"]["path"] == "control"
        assert all(n["path"].startswith("control") for n in _walk(data["tree"]))


class TestUnknownPaths:
    """An unknown path or session is a clear error with exit status 2."""

    @pytest.mark.parametrize(
        "argv",
        [
            ["inspect", "sessions/session:nope"],
            ["kill", "no/such/actor"],
            ["tree", "nowhere"],
            ["steer", "sessions/session:nope/turn", "go on"],
        ],
    )
    def test_exit_status_two(self, shared_daemon: DaemonProcess, argv: list[str]) -> None:
        """The command fails with status 2 and names what was not found."""
        result = run_cli(shared_daemon.home, *argv)
        assert result.returncode == 2, (result.stdout, result.stderr)
        assert "no live actor at" in result.stderr

    def test_json_error(self, shared_daemon: DaemonProcess) -> None:
        """With --json the error is a JSON object on stdout too."""
        result = run_cli(shared_daemon.home, "inspect", "ghost", "--json")
        assert result.returncode == 2
        assert json.loads(result.stdout) == {"error": {"code": "not_found", "message": "no live actor at 'ghost'"}}

    def test_no_daemon(self, home) -> None:  # type: ignore[no-untyped-def]  # a pytest fixture, typed by its fixture function
        """Inspection commands do not start a daemon; they say none runs and exit 1."""
        result = run_cli(home, "tree")
        assert result.returncode == 1
        assert "no daemon is running" in result.stderr
        assert not (home / "run" / "control.sock").exists()


class TestInspectAndKill:
    """`inspect` shows a live actor; `kill` stops one by path."""

    def test_inspect_live_actor(self, shared_daemon: DaemonProcess) -> None:
        """`inspect control --json` shows the control actor's own details."""
        data = json.loads(run_cli(shared_daemon.home, "inspect", "control", "--json").stdout)
        assert data["kind"] == "control"
        assert data["state"] == "running"
        assert data["details"]["socket"] == str(shared_daemon.paths.socket)
        assert data["details"]["accepted"] >= 1
        assert "children" not in data

    def test_kill_a_connection(self, shared_daemon: DaemonProcess) -> None:
        """Killing another client's connection actor closes that client's socket, not the daemon."""
        victim = shared_daemon.client(client="victim")
        path = victim.welcome.connection
        result = run_cli(shared_daemon.home, "kill", path, "--reason", "testing kill", "--json")
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout) == {"ok": True, "message": f"stopping {path}"}
        victim.settimeout(5)
        with pytest.raises(Exception, match="closed|broke"):
            victim.request(c.Status(victim.next_id()))
        victim.close()
        assert path not in run_cli(shared_daemon.home, "tree").stdout
        assert run_cli(shared_daemon.home, "status").returncode == 0

    def test_kill_infrastructure_refused(self, shared_daemon: DaemonProcess) -> None:
        """The daemon's own parts are not killable; `stop` is the way."""
        result = run_cli(shared_daemon.home, "kill", "store")
        assert result.returncode == 2
        assert "hermes-actors stop" in result.stderr

    def test_ps_without_sessions(self, shared_daemon: DaemonProcess) -> None:
        """`ps --json` lists no sessions when none is live."""
        result = run_cli(shared_daemon.home, "ps", "--json")
        assert json.loads(result.stdout) == {"sessions": []}


class TestHelp:
    """`--help` reads well and needs no daemon."""

    def test_help_lists_every_command(self) -> None:
        """The top-level help names every command."""
        result = subprocess.run(
            [sys.executable, "-m", "cli", "--help"], capture_output=True, text=True, cwd=REPO, env=environment(REPO)
        )
        assert result.returncode == 0
        for command in ("daemon", "stop", "status", "chat", "attach", "tree", "ps", "inspect", "kill", "interrupt", "steer", "sessions", "demo"):
            assert command in result.stdout


class TestClosedPipe:
    """A reader that leaves early (`| head -2`) ends any command quietly: no traceback, no BrokenPipeError."""

    @pytest.mark.parametrize(
        "args",
        [("sessions", "list"), ("tree",), ("status",), ("ps", "--json"), ("skills", "list"), ("config", "check"), ("--help",)],
    )
    def test_no_traceback(self, shared_daemon: DaemonProcess, args: tuple[str, ...]) -> None:
        """stdout is a pipe whose reader has already gone: exit status 1, and stderr says nothing of it."""
        env = environment(shared_daemon.home)
        env.pop("PYTHONUNBUFFERED")  # buffered, as for a person's shell
        read_end, write_end = os.pipe()
        os.close(read_end)  # the reader is gone before the first byte: every write fails, with no race
        try:
            result = subprocess.run(
                [sys.executable, "-m", "cli", *args], env=env, cwd=REPO, stdin=subprocess.DEVNULL,
                stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=30,
            )
        finally:
            os.close(write_end)
        assert "Traceback" not in result.stderr and "BrokenPipeError" not in result.stderr, result.stderr
        assert result.returncode == 1, result.stderr


class TestStopWithoutDaemon:
    """`stop` with no daemon running succeeds: what it asks for holds (as the README says)."""

    @pytest.mark.parametrize("json_flag", [(), ("--json",)])
    def test_exit_zero(self, tmp_path: Path, json_flag: tuple[str, ...]) -> None:
        """Exit status 0 and "no daemon was running", in text and JSON."""
        home = tmp_path / "home"
        home.mkdir(mode=0o700)
        result = run_cli(home, "stop", *json_flag)
        assert result.returncode == 0, result.stderr
        assert "no daemon was running" in result.stdout
