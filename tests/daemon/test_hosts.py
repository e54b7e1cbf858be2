"""``daemon.hosts: 2``: the control socket's sessions run in two host processes under one front.

Everything here goes through the real front: its control socket, its links to the real host
processes, the real SQLite file they share, and the scripted provider on loopback.
"""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from actors.platform.daemon.cluster.hosts.paths import HostPaths
from control.errors import RequestFailed
from messages import control as c
from messages.events import StatusUpdate, TurnFinished
from tests.daemon.helpers import (
    REPO,
    DaemonProcess,
    ScriptedProviderProcess,
    attached_turn,
    cli_json,
    environment,
    events_until_turn_finished,
    inspect_json,
    run_cli,
    wait_for,
)
from tests.daemon.test_recovery import _stored_texts
from tests.mcp.helpers import TOY, processes_with, tag
from tests.daemon.test_sessions import NO_TOOLS, _chat


@pytest.fixture
def front(tmp_path: Path) -> Iterator[DaemonProcess]:
    """A daemon whose sessions run in two host processes."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    (home / "config.yaml").write_text(json.dumps({"daemon": {"hosts": 2, "shutdown_timeout_seconds": 5}}))
    daemon = DaemonProcess(home).start()
    try:
        # The control socket answers before the hosts serve (a request meanwhile waits for one).
        wait_for("both hosts serving", lambda: all(_inspect(daemon, f"hosts/host:{n}")["state"] == "running" for n in (1, 2)))
        yield daemon
    finally:
        daemon.stop()


def _tree(daemon: DaemonProcess, *path: str) -> dict[str, Any]:
    return dict(cli_json(daemon, "tree", *path)["tree"])


def _host_sessions(daemon: DaemonProcess) -> dict[str, list[str]]:
    """Each host's live sessions, by host path."""
    hosts = next(node for node in _tree(daemon)["children"] if node["path"] == "hosts")
    out = {}
    for host in hosts["children"]:
        sessions = next((n for n in host["children"] if n["path"].endswith("/sessions")), {"children": []})
        out[host["path"]] = [n["path"].rsplit(":", 1)[1] for n in sessions["children"]]
    return out


def _inspect(daemon: DaemonProcess, path: str) -> dict[str, Any]:
    return inspect_json(daemon.home, path)


def _restarted(daemon: DaemonProcess, path: str, old_pid: int) -> dict[str, Any] | None:
    """The actor at ``path`` once it runs again in a process other than ``old_pid``; None until then (also
    while it is between processes, when no actor is at ``path`` at all)."""
    try:
        node = _inspect(daemon, path)
    except RequestFailed:
        return None
    return node if node["state"] == "running" and node["details"]["pid"] != old_pid else None


class TestHosts:
    """Placement, the tree across processes, paths, and a host killed mid-turn."""

    def test_sessions_spread_over_the_hosts_and_show_in_one_tree(
        self, front: DaemonProcess, provider: ScriptedProviderProcess, tmp_path: Path
    ) -> None:
        with front.client() as client:
            created = [provider.create_session(client, str(tmp_path)) for _ in range(4)]
        placed = _host_sessions(front)
        assert sorted(placed) == ["hosts/host:1", "hosts/host:2"]
        assert sorted(len(ids) for ids in placed.values()) == [2, 2]
        assert sorted(placed["hosts/host:1"] + placed["hosts/host:2"]) == sorted(created)
        # The front runs none of them itself.
        front_sessions = next(n for n in _tree(front)["children"] if n["path"] == "sessions")
        assert front_sessions["children"] == []
        assert sorted(row["session_id"] for row in cli_json(front, "ps")["sessions"]) == sorted(created)
        status = cli_json(front, "status")
        assert status["live_sessions"] == 4 and status["running_turns"] == 0
        assert status["actors"] == len(_paths(_tree(front)))
        hosts = status["hosts"]
        assert [(h["index"], h["state"], h["live_sessions"]) for h in hosts] == [(1, "running", 2), (2, "running", 2)]
        assert all(h["pid"] not in (None, front.process.pid) for h in hosts)  # type: ignore[union-attr]  # the status is untyped JSON: each host is an object
        text = run_cli(front.home, "status").stdout
        assert f"hosts: host:1 running (pid {hosts[0]['pid']}): {hosts[0]['actors']} actors, 2 live sessions" in text
        session_id = placed["hosts/host:2"][0]
        full = f"hosts/host:2/sessions/session:{session_id}"
        for path in (session_id, f"sessions/session:{session_id}", full):
            assert _inspect(front, path)["path"] == full
        assert _tree(front, session_id)["path"] == full
        host = _inspect(front, "hosts/host:2")
        assert host["kind"] == "host" and host["details"]["pid"] != front.process.pid  # type: ignore[union-attr]  # the status is untyped JSON: each host is an object

    def test_chat_through_the_front_and_kill_by_any_path(
        self, front: DaemonProcess, provider: ScriptedProviderProcess
    ) -> None:
        session_id, result = _chat(front, provider, NO_TOOLS)
        assert result.returncode == 0, result.stderr
        assert NO_TOOLS in _stored_texts(front, session_id)
        with front.client() as client:
            # A chat -q session hibernates once its turn is over and no one is attached: this client keeps it.
            events = attached_turn(client, session_id, "a second message, no tools")
            assert isinstance(events[-1], TurnFinished) and events[-1].reason == "completed"
            host = next(path for path, ids in _host_sessions(front).items() if session_id in ids)
            killed = run_cli(front.home, "kill", f"{host}/sessions/session:{session_id}")
            assert killed.returncode == 0, killed.stderr
            assert "stopping" in killed.stdout
            wait_for("the session stopping", lambda: session_id not in sum(_host_sessions(front).values(), []))
        refused = run_cli(front.home, "kill", "hosts")
        assert refused.returncode != 0 and "part of the daemon" in refused.stderr

    def test_a_host_killed_mid_turn_is_restarted_and_the_session_resumes(
        self, front: DaemonProcess, provider: ScriptedProviderProcess, tmp_path: Path
    ) -> None:
        """kill -9 of a host: the front restarts it, tells the attached client, and the session's next
        message is answered with the whole conversation, the message sent before the crash included."""
        with front.client() as client:
            session_id = provider.create_session(client, str(tmp_path))
            events = attached_turn(client, session_id, NO_TOOLS)
            assert events[-1].reason == "completed"
            host = next(path for path, ids in _host_sessions(front).items() if session_id in ids)
            pid = _inspect(front, host)["details"]["pid"]
            provider.push({"text": "never delivered", "delay_first_byte": 60})
            client.request(c.SendMessage(client.next_id(), session_id, "message before the crash, no tools"))
            wait_for("the turn starting", lambda: any("/turn" in p for p in _paths(_tree(front, host))))
            os.kill(pid, signal.SIGKILL)
            notice = _next_of(client, StatusUpdate)
            assert "went away" in notice.text and notice.kind == "host_lost"
            restarted = wait_for("the host restarting", lambda: (n := _inspect(front, host))["state"] == "running" and n["details"]["pid"] != pid and n)
            assert restarted["restarts"] == 1
            provider.reset()
            client.request(c.SendMessage(client.next_id(), session_id, "after the crash, no tools"))
            events = events_until_turn_finished(client)
        assert events[-1].reason == "completed"
        texts = _stored_texts(front, session_id)
        assert NO_TOOLS in texts and "message before the crash, no tools" in texts and "after the crash, no tools" in texts
        sent = [json.dumps(r.get("body")) for r in provider.requests()]
        assert "message before the crash" in sent[-1]

    def test_chat_q_whose_host_is_killed_ends(self, front: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """`chat -q` whose host is killed mid-turn: it says the turn was lost and exits 1, never waiting
        for an answer that will not come (nor taking another turn's for its own)."""
        provider.push({"text": "never delivered", "delay_first_byte": 60})
        chat = subprocess.Popen(
            [sys.executable, "-m", "cli", "chat", "-q", "lost with its host, no tools", *provider.chat_flags()],
            env=environment(front.home), cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True,
        )
        try:
            assert chat.stderr is not None
            session_id = re.search(r"session (\w+)", chat.stderr.readline()).group(1)  # type: ignore[union-attr]  # no match fails the test on this line, which is the check
            host = wait_for("the turn starting", lambda: next(
                (h for h, ids in _host_sessions(front).items() if session_id in ids and any("/turn" in p for p in _paths(_tree(front, h)))),
                None,
            ))
            os.kill(_inspect(front, host)["details"]["pid"], signal.SIGKILL)
            out, err = chat.communicate(timeout=30)
        finally:
            if chat.poll() is None:
                chat.kill()
                chat.communicate()
        assert chat.returncode == 1, (out, err)
        assert "went away" in err and "the turn was lost" in err, err
        assert out == ""

    def test_a_host_that_closes_its_link_is_restarted(self, front: DaemonProcess) -> None:
        """The front's shared link is the host's first connection; when the host closes it (here: killed by
        path, through that very link), the host is useless to the front, so it is restarted."""
        pid = _inspect(front, "hosts/host:1")["details"]["pid"]
        run_cli(front.home, "kill", "hosts/host:1/control/conn:1")  # its reply may be lost with the link
        restarted = wait_for("host:1 restarting", lambda: _restarted(front, "hosts/host:1", pid))
        assert restarted["restarts"] == 1
        assert "closed its link" in front.log()

    def test_stop_ends_every_host_process(self, front: DaemonProcess, provider: ScriptedProviderProcess, tmp_path: Path) -> None:
        with front.client() as client:
            provider.create_session(client, str(tmp_path))
        pids = [_inspect(front, f"hosts/host:{n}")["details"]["pid"] for n in (1, 2)]
        front.signal(signal.SIGTERM)
        assert front.wait(30) == 0
        for pid in pids:
            wait_for(f"host {pid} exiting", lambda pid=pid: not _alive(pid), timeout=10)
        assert not list((front.home / "run" / "hosts").glob("*.sock"))

    def test_a_deep_homes_hosts_serve_from_the_per_user_directory(self, tmp_path: Path) -> None:
        """A home too deep for run/hosts/host-<n>.sock: each host binds its socket in the per-user
        directory the front recorded, 0600, and serves."""
        home = tmp_path / ("deep-" * 14) / "home"
        home.mkdir(parents=True, mode=0o700)
        (home / "config.yaml").write_text(json.dumps({"daemon": {"hosts": 2}}))
        daemon = DaemonProcess(home).start()
        try:
            wait_for("both hosts serving", lambda: all(_inspect(daemon, f"hosts/host:{n}")["state"] == "running" for n in (1, 2)))
            for index in (1, 2):
                paths = HostPaths(home, index)
                assert paths.socket.parent == daemon.paths.user_dir != paths.hosts_dir
                assert stat.S_IMODE(paths.socket.lstat().st_mode) == 0o600
                assert paths.socket_record.read_text() == f"{paths.socket}\n"
        finally:
            daemon.stop()


class TestMcpAcrossHosts:
    """With daemon.hosts: 2, each stdio MCP server runs once (the front's), and host sessions call it."""

    def test_one_server_process_and_a_host_session_calls_it(
        self, tmp_path: Path, provider: ScriptedProviderProcess
    ) -> None:
        marker = tag()
        home = tmp_path / "home"
        home.mkdir(mode=0o700)
        toy = {"command": sys.executable, "args": [TOY, "stdio", marker], "connect_timeout": 20}
        (home / "config.yaml").write_text(json.dumps({"daemon": {"hosts": 2}, "mcp_servers": {"toy": toy}}))
        daemon = DaemonProcess(home).start()
        try:
            wait_for("both hosts serving", lambda: all(_inspect(daemon, f"hosts/host:{n}")["state"] == "running" for n in (1, 2)))
            wait_for("the toy server ready", lambda: [s["state"] for s in cli_json(daemon, "status")["mcp"]] == ["ready"])
            for index in (1, 2):  # each host has the front's tools registered through its relay
                wait_for(f"host {index}'s relay", lambda i=index: _inspect(daemon, f"hosts/host:{i}/mcp-relay")["details"]["tools"] == 8)
            assert len(_servers(marker)) == 1, _servers(marker)  # was three: the front's and one per host
            provider.reset()
            provider.push(
                {"tool_calls": [{"id": "call_mcp", "name": "mcp_toy_echo", "arguments": {"text": "via the front"}}]},
                {"text": "The server echoed."},
            )
            _, result = _chat(daemon, provider, "echo something")  # a chat's session runs on a host
            assert result.returncode == 0, result.stderr
            last = provider.requests()[-1]["body"]
            tool_messages = [m for m in last["messages"] if m.get("role") == "tool"]
            assert json.loads(tool_messages[-1]["content"]) == {"result": "via the front"}
        finally:
            daemon.stop()
        assert processes_with(marker) == []


def _servers(marker: str) -> list[int]:
    """The server processes themselves among those tagged ``marker`` (not the jail's bwrap around one)."""
    servers = []
    for pid in processes_with(marker):
        try:
            argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0", 1)[0]
        except OSError:
            continue
        if not argv0.endswith(b"bwrap"):
            servers.append(pid)
    return servers


def _paths(node: dict[str, Any]) -> list[str]:
    return [node["path"], *(p for child in node["children"] for p in _paths(child))]


def _next_of(client: Any, kind: type) -> Any:
    while True:
        event = client.receive()
        if isinstance(event, kind):
            return event


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ", 1)[1][0] != "Z"
    except FileNotFoundError:
        return False
