"""`sessions list|search|show|export|delete`, `steer`, and killing a subagent, through the CLI."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from messages import control as c
from tests.daemon.helpers import DaemonProcess, ScriptedProviderProcess, run_cli, run_cli_bytes
from tests.daemon.test_recovery import _paths, _tree, _wait_for_path
from tests.daemon.test_sessions import _chat


def _until(client: Any, events: list[Any], predicate: Any) -> Any:
    """Receive events into ``events`` until one satisfies ``predicate``; return it."""
    while True:
        event = client.receive()
        events.append(event)
        if predicate(event):
            return event


@pytest.fixture
def daemon(shared_daemon: DaemonProcess, provider: ScriptedProviderProcess) -> DaemonProcess:
    """One daemon for the module; each test uses sessions of its own."""
    provider.reset()
    return shared_daemon


class TestSessionsCommands:
    """Stored sessions can be listed, searched, shown, exported and deleted."""

    def test_list_search_show_export_delete(self, daemon: DaemonProcess, provider: ScriptedProviderProcess, tmp_path: Any) -> None:
        """A chatted session appears everywhere until it is deleted, then it is not found (exit 2)."""
        session_id, _ = _chat(daemon, provider, "the zanzibar question, no tools")
        listed = json.loads(run_cli(daemon.home, "sessions", "list", "--json").stdout)["sessions"]
        mine = [s for s in listed if s["id"] == session_id]
        # Live or not: a finished `chat -q` session hibernates as soon as its client is gone.
        assert mine and mine[0]["message_count"] >= 2
        assert mine[0]["preview"].startswith("the zanzibar question")
        found = json.loads(run_cli(daemon.home, "sessions", "search", "zanzibar", "--json").stdout)["matches"]
        assert [m["session"]["id"] for m in found] == [session_id]
        assert "zanzibar" in found[0]["hits"][0]["snippet"].lower()
        text = run_cli(daemon.home, "sessions", "show", session_id)
        assert text.returncode == 0 and "[user] the zanzibar question, no tools" in text.stdout
        out = tmp_path / "export.jsonl"
        exported = run_cli(daemon.home, "sessions", "export", session_id, "-o", str(out))
        assert exported.returncode == 0, exported.stderr
        lines = [json.loads(line) for line in out.read_text().splitlines()]
        assert len(lines) >= 3
        assert (out.stat().st_mode & 0o777) == 0o600
        deleted = run_cli(daemon.home, "sessions", "delete", session_id, "--yes", "--json")
        assert json.loads(deleted.stdout) == {"ok": True, "message": f"deleted {session_id}"}
        assert f"sessions/session:{session_id}" not in _paths(_tree(daemon))
        gone = run_cli(daemon.home, "sessions", "show", session_id)
        assert gone.returncode == 2
        assert run_cli(daemon.home, "sessions", "search", "zanzibar", "--json").stdout.strip() == '{"matches": []}'

    def test_delete_without_a_terminal_needs_yes(self, daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """No terminal to ask on and no --yes: refused (exit 2, `invalid`), and the session stays stored."""
        session_id, _ = _chat(daemon, provider, "keep me, no tools")
        refused = run_cli(daemon.home, "sessions", "delete", session_id, "--json")
        assert refused.returncode == 2, refused.stderr
        assert json.loads(refused.stdout)["error"]["code"] == "invalid"
        assert "--yes" in refused.stderr
        assert run_cli(daemon.home, "sessions", "show", session_id).returncode == 0

    def test_bad_search_arguments(self, daemon: DaemonProcess) -> None:
        """A limit outside 1-10 is refused with exit status 2."""
        result = run_cli(daemon.home, "sessions", "search", "x", "--limit", "50")
        assert result.returncode == 2
        assert "limit" in result.stderr


class TestSteer:
    """`steer` reaches sessions and refuses other actors."""

    def test_steer_refuses_a_non_session(self, daemon: DaemonProcess) -> None:
        """Steering the store is invalid (exit 2)."""
        result = run_cli(daemon.home, "steer", "control", "hello")
        assert result.returncode == 2
        assert "not a session" in result.stderr

    def test_steer_reaches_the_next_tool_result(self, daemon: DaemonProcess, provider: ScriptedProviderProcess, tmp_path: Path) -> None:
        """Text steered during a tool call is in what the model sees next."""
        created = run_cli_bytes(daemon.home, "chat", "-q", "hello, no tools please", *provider.chat_flags(), cwd=tmp_path)
        match = re.search(rb"session (\w+)", created.stderr)
        assert match, created.stderr
        session_id = match.group(1).decode()
        # The command ends when the test says so (a file in its working directory), not after a guess of how
        # long the steer takes to arrive; it gives up after 60 s so a broken steer cannot hang the run.
        wait = "for _ in $(seq 3000); do [ -e steered ] && exit 0; sleep 0.02; done; exit 1"
        provider.push(
            {"tool_calls": [{"id": "call_wait", "name": "terminal", "arguments": {"command": wait}}]},
            {"text": "steered answer"},
        )
        with daemon.client() as client:
            client.request(c.Attach(client.next_id(), session_id, None))
            client.request(c.SendMessage(client.next_id(), session_id, "wait a little"))
            _wait_for_path(daemon, lambda p: p.endswith("tool:call_wait"))
            steered = run_cli(daemon.home, "steer", session_id, "ALSO CHECK THE LOGS")
            assert steered.returncode == 0, steered.stderr
            (tmp_path / "steered").touch()
            while type(client.receive()).__name__ != "TurnFinished":
                pass
        shown = json.loads(run_cli(daemon.home, "sessions", "show", session_id, "--head", "50", "--json").stdout)
        tool_messages = [m["message"] for m in shown["head"] if m["message"]["role"] == "tool"]
        assert any("ALSO CHECK THE LOGS" in str(m.get("content")) for m in tool_messages)


class TestKillSubagent:
    """Killing one subagent reports it interrupted; its sibling finishes."""

    def test_kill_one_child(self, daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """The delegate_task result lists the killed child as interrupted and the other as completed."""
        session_id, _ = _chat(daemon, provider, "hello, no tools please")
        tasks = [{"goal": "first small job"}, {"goal": "second small job"}]
        provider.push(
            {"tool_calls": [{"id": "call_delegate", "name": "delegate_task", "arguments": {"tasks": tasks}}]},
            {"text": "child reply that never comes", "delay_first_byte": 60},
            {"text": "the quick child is done"},
            {"text": "parent done"},
        )
        with daemon.client() as client:
            client.request(c.Attach(client.next_id(), session_id, None))
            client.request(c.SendMessage(client.next_id(), session_id, "delegate two jobs"))
            own_path = f"sessions/session:{session_id}"
            events: list[Any] = []
            # The quick child finishes first (its TurnFinished is relayed under its path) ...
            quick = _until(client, events, lambda e: type(e).__name__ == "TurnFinished" and e.path != own_path)
            worker = _wait_for_path(daemon, lambda p: p.endswith("tool:call_delegate"))
            # ... which leaves the slow one running: kill it.
            slow = _wait_for_path(daemon, lambda p: p.startswith(worker + "/subagent:") and p.count("/") == worker.count("/") + 1)
            assert slow.rsplit("/", 1)[-1] != quick.path.rsplit("/", 1)[-1]
            killed = run_cli(daemon.home, "kill", slow)
            assert killed.returncode == 0, killed.stderr
            _until(client, events, lambda e: type(e).__name__ == "TurnFinished" and e.path == own_path)
        delegate = [e for e in events if type(e).__name__ == "ToolFinished" and e.name == "delegate_task"]
        assert delegate, [type(e).__name__ for e in events]
        assert events[-1].final_text == "parent done"
        shown = json.loads(run_cli(daemon.home, "sessions", "show", session_id, "--head", "50", "--json").stdout)
        result = next(m["message"]["content"] for m in shown["head"] if m["message"].get("tool_call_id") == "call_delegate")
        statuses = sorted(r["status"] for r in json.loads(result)["results"])
        assert statuses == ["completed", "interrupted"]
