"""Crashes, graceful stops, hibernation and kills, with live sessions."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from messages import control as c
from tests.daemon.helpers import DaemonProcess, ScriptedProviderProcess, attached_turn, run_cli
from tests.daemon.test_sessions import NO_TOOLS, _chat
from tests.jail.fixtures import host_pid
from tests.terminal.helpers import pid_alive


def _write_config(home: Path, text: str) -> None:
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    (home / "config.yaml").write_text(text)


def _tree(daemon: DaemonProcess) -> dict[str, Any]:
    return json.loads(run_cli(daemon.home, "tree", "--json").stdout)["tree"]


def _paths(node: dict[str, Any]) -> list[str]:
    out = [node["path"]]
    for child in node["children"]:
        out.extend(_paths(child))
    return out


def _wait_for_path(daemon: DaemonProcess, predicate: Any, timeout: float = 30) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [p for p in _paths(_tree(daemon)) if predicate(p)]
        if found:
            return found[0]
        time.sleep(0.1)
    raise AssertionError("no such actor appeared")


def _stored_texts(daemon: DaemonProcess, session_id: str) -> list[str]:
    shown = json.loads(run_cli(daemon.home, "sessions", "show", session_id, "--head", "100", "--json").stdout)
    return [str(m["message"].get("content")) for m in shown["head"]]


class TestCrash:
    """kill -9 of the daemon loses nothing committed; the session continues after a restart."""

    def test_kill_9_mid_turn_then_restart(self, daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """The user message sent before the crash is stored; the restarted daemon resumes the session, and the
        stored conversation holds its system prompt and each message once."""
        session_id, _ = _chat(daemon, provider, NO_TOOLS)
        provider.push({"text": "never delivered", "delay_first_byte": 60})
        with daemon.client() as client:
            client.request(c.SendMessage(client.next_id(), session_id, "message before the crash, no tools"))
        _wait_for_path(daemon, lambda p: p.startswith(f"sessions/session:{session_id}/turn"))
        daemon.signal(signal.SIGKILL)
        daemon.wait(10)
        daemon.stop()
        provider.reset()
        restarted = DaemonProcess(daemon.home).start()
        try:
            assert "removing stale control socket" in restarted.log()
            texts = _stored_texts(restarted, session_id)
            assert NO_TOOLS in texts
            assert "message before the crash, no tools" in texts
            with restarted.client() as client:
                events = attached_turn(client, session_id, "after the restart, no tools")
            assert events[-1].reason == "completed"
            assert "after the restart, no tools" in events[-1].final_text
            shown = json.loads(run_cli(restarted.home, "sessions", "show", session_id, "--head", "100", "--json").stdout)
            roles = [m["message"]["role"] for m in shown["head"]]
            texts = _stored_texts(restarted, session_id)
            assert roles.count("system") == 1, roles
            assert texts.count(NO_TOOLS) == 1, texts
            assert texts.count("message before the crash, no tools") == 1, texts
            assert texts.count("after the restart, no tools") == 1, texts
        finally:
            restarted.stop()


class TestGracefulStop:
    """SIGTERM during a turn interrupts it, commits, and exits within the bound."""

    def test_sigterm_mid_turn(self, home: Path, provider: ScriptedProviderProcess) -> None:
        """The daemon exits 0 within shutdown_timeout_seconds (+ grace), socket gone, the message kept."""
        _write_config(home, "daemon:\n  shutdown_timeout_seconds: 4\n")
        daemon = DaemonProcess(home).start()
        try:
            session_id, _ = _chat(daemon, provider, NO_TOOLS)
            provider.push({"text": "never delivered", "delay_first_byte": 60})
            with daemon.client() as client:
                client.request(c.SendMessage(client.next_id(), session_id, "interrupted by shutdown, no tools"))
            _wait_for_path(daemon, lambda p: p.startswith(f"sessions/session:{session_id}/turn"))
            started = time.monotonic()
            daemon.signal(signal.SIGTERM)
            assert daemon.wait(15) == 0
            assert time.monotonic() - started < 4 + 2.5
            assert not daemon.paths.socket.exists()
        finally:
            daemon.stop()
            provider.reset()
        restarted = DaemonProcess(home).start()
        try:
            assert "interrupted by shutdown, no tools" in _stored_texts(restarted, session_id)
        finally:
            restarted.stop()


class TestHibernation:
    """An idle session leaves memory and comes back on the next message."""

    def test_hibernate_and_wake(self, home: Path, provider: ScriptedProviderProcess) -> None:
        """With a short idle time the session actor goes; a message wakes it with its history."""
        _write_config(home, "daemon:\n  hibernate_after_seconds: 0.5\n")
        daemon = DaemonProcess(home).start()
        try:
            session_id, first = _chat(daemon, provider, NO_TOOLS)
            assert first.returncode == 0
            deadline = time.monotonic() + 20
            while f"sessions/session:{session_id}" in _paths(_tree(daemon)):
                assert time.monotonic() < deadline, "the session never hibernated"
                time.sleep(0.2)
            sessions = json.loads(run_cli(home, "inspect", "sessions", "--json").stdout)
            assert sessions["details"]["hibernated"] >= 1
            listed = json.loads(run_cli(home, "sessions", "list", "--json").stdout)["sessions"]
            assert [s["live"] for s in listed if s["id"] == session_id] == [False]
            with daemon.client() as client:
                events = attached_turn(client, session_id, "wake up, no tools")
            assert events[-1].reason == "completed"
            assert len(_stored_texts(daemon, session_id)) >= 4
        finally:
            daemon.stop()


class TestKill:
    """`kill` by path: a tool worker, a session."""

    def test_kill_tool_worker(self, shared_daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """Killing a running tool gives the model an error result; the turn goes on to its answer."""
        session_id, _ = _chat(shared_daemon, provider, NO_TOOLS)
        provider.push(
            {"tool_calls": [{"id": "call_sleep", "name": "terminal", "arguments": {"command": "sleep 60"}}]},
            {"text": "The tool was stopped; carrying on."},
        )
        with shared_daemon.client() as client:
            client.request(c.Attach(client.next_id(), session_id, None))
            client.request(c.SendMessage(client.next_id(), session_id, "sleep a while"))
            tool = _wait_for_path(shared_daemon, lambda p: p.endswith("tool:call_sleep"))
            inspected = json.loads(run_cli(shared_daemon.home, "inspect", tool, "--json").stdout)
            assert inspected["kind"] == "tool"
            rows = json.loads(run_cli(shared_daemon.home, "ps", "--json").stdout)["sessions"]
            mine = next(row for row in rows if row["session_id"] == session_id)
            assert mine["turn_running"] is True and mine["tools"] == [tool]
            turn = json.loads(run_cli(shared_daemon.home, "inspect", f"sessions/session:{session_id}/turn", "--json").stdout)
            assert turn["budget"]["used"] >= 1 and turn["budget"]["total"] == 90
            assert "budget" in run_cli(shared_daemon.home, "tree").stdout
            killed = run_cli(shared_daemon.home, "kill", tool)
            assert killed.returncode == 0, killed.stderr
            events = []
            while not events or type(events[-1]).__name__ != "TurnFinished":
                events.append(client.receive())
        finished = [e for e in events if type(e).__name__ == "ToolFinished"]
        assert finished and not finished[0].ok
        assert "operator" in finished[0].result_preview
        assert events[-1].final_text == "The tool was stopped; carrying on."

    def test_kill_session_keeps_it_stored(self, shared_daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """A killed session leaves the tree, stays in the store, and resumes on the next message."""
        session_id, _ = _chat(shared_daemon, provider, NO_TOOLS)
        with shared_daemon.client() as watcher:
            # Attached, the finished chat -q session is live (woken if it already hibernated) until killed.
            watcher.request(c.Attach(watcher.next_id(), session_id, None))
            result = run_cli(shared_daemon.home, "kill", session_id)
        assert result.returncode == 0, result.stderr
        deadline = time.monotonic() + 10
        while f"sessions/session:{session_id}" in _paths(_tree(shared_daemon)):
            assert time.monotonic() < deadline
            time.sleep(0.1)
        assert NO_TOOLS in _stored_texts(shared_daemon, session_id)
        with shared_daemon.client() as client:
            assert attached_turn(client, session_id, "back again, no tools")[-1].reason == "completed"

    def test_interrupt_command(self, shared_daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """`interrupt SESSION` ends a running turn as interrupted."""
        session_id, _ = _chat(shared_daemon, provider, NO_TOOLS)
        provider.push({"text": "too slow", "delay_first_byte": 60})
        with shared_daemon.client() as client:
            client.request(c.Attach(client.next_id(), session_id, None))
            client.request(c.SendMessage(client.next_id(), session_id, "this will be interrupted"))
            _wait_for_path(shared_daemon, lambda p: p.startswith(f"sessions/session:{session_id}/turn"))
            assert run_cli(shared_daemon.home, "interrupt", session_id).returncode == 0
            events = []
            while not events or type(events[-1]).__name__ != "TurnFinished":
                events.append(client.receive())
        provider.reset()
        assert events[-1].reason == "interrupted"


@pytest.fixture(autouse=True)
def _fresh_script(provider: ScriptedProviderProcess) -> None:
    """Each test starts with an empty script (rule mode answers)."""
    provider.reset()


class TestBusy:
    """Beyond max_running_turns a new turn gets a clear busy error."""

    def test_running_turn_cap(self, home: Path, provider: ScriptedProviderProcess) -> None:
        """With a cap of 1 and one turn running, another session's message is refused as busy (chat exits 1)."""
        _write_config(home, "daemon:\n  max_running_turns: 1\n")
        daemon = DaemonProcess(home).start()
        try:
            first, _ = _chat(daemon, provider, NO_TOOLS)
            provider.push({"text": "slow", "delay_first_byte": 60})
            with daemon.client() as client:
                client.request(c.SendMessage(client.next_id(), first, "a long turn, no tools"))
                _wait_for_path(daemon, lambda p: p.startswith(f"sessions/session:{first}/turn"))
                result = run_cli(home, "chat", "-q", NO_TOOLS, *provider.chat_flags(), timeout=60)
                assert result.returncode == 1
                assert "busy" in result.stderr
                assert "max_running_turns" in result.stderr
        finally:
            daemon.stop()
            provider.reset()


class TestNoLeaks:
    """Stopping the daemon mid-tool leaves no child process behind."""

    def test_sigterm_during_execute_code(self, home: Path, provider: ScriptedProviderProcess, tmp_path: Path) -> None:
        """The sandbox child of a running execute_code is gone once the daemon has exited."""
        pid_file = tmp_path / "child.pid"
        script = (
            f"import os, time\nopen({str(pid_file)!r}, 'w').write(f\"{{os.getpid()}} {{os.readlink('/proc/self/ns/pid')}}\")\n"
            "time.sleep(120)\n"
        )
        daemon = DaemonProcess(home).start()
        try:
            # full-access: the child writes where the host sees it (test_jail_lifecycle covers jails), its pid as
            # its own PID namespace numbers it.
            session_id, _ = _chat(daemon, provider, NO_TOOLS, "--sandbox", "full-access")
            provider.push({"tool_calls": [{"id": "call_code", "name": "execute_code", "arguments": {"code": script}}]})
            with daemon.client() as client:
                client.request(c.SendMessage(client.next_id(), session_id, "run a long script"))
            deadline = time.monotonic() + 30
            while not pid_file.exists() or not pid_file.read_text():
                assert time.monotonic() < deadline, "the script never started"
                time.sleep(0.1)
            pid, namespace = pid_file.read_text().split()
            child = host_pid(int(pid), namespace)
            daemon.signal(signal.SIGTERM)
            assert daemon.wait(20) == 0
        finally:
            daemon.stop()
            provider.reset()
        deadline = time.monotonic() + 10
        while pid_alive(child):
            assert time.monotonic() < deadline, f"sandbox child {child} outlived the daemon"
            time.sleep(0.1)
