"""Sessions through the real CLI and socket against the scripted provider."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from messages import control as c
from tests.daemon.helpers import REPO, DaemonProcess, LineReader, ScriptedProviderProcess, environment, run_cli

NO_TOOLS = "hello, no tools please"


@pytest.fixture
def daemon(shared_daemon: DaemonProcess, provider: ScriptedProviderProcess) -> DaemonProcess:
    """One daemon serves every test here: each test works in sessions of its own."""
    provider.reset()
    return shared_daemon


def _chat(daemon: DaemonProcess, provider: ScriptedProviderProcess, text: str, *extra: str, api_mode: str = "chat_completions") -> tuple[str, subprocess.CompletedProcess[str]]:
    result = run_cli(daemon.home, "chat", "-q", text, *provider.chat_flags(api_mode), *extra, timeout=90)
    match = re.search(r"session (\w+)", result.stderr)
    assert match, (result.stdout, result.stderr)
    return match.group(1), result


def _attach(daemon: DaemonProcess, session_id: str, *extra: str) -> tuple[subprocess.Popen[str], LineReader]:
    process = subprocess.Popen(
        [sys.executable, "-m", "cli", "attach", session_id, "--json", *extra],
        env=environment(daemon.home), cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL, text=True,
    )
    return process, LineReader(process.stdout)


def _wait_attached(daemon: DaemonProcess, session_id: str, count: int) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        tree = json.loads(run_cli(daemon.home, "tree", "control", "--json").stdout)["tree"]
        attached = [n for n in tree["children"] if session_id in n["details"].get("attached", [])]
        if len(attached) >= count:
            return
        time.sleep(0.1)
    raise AssertionError(f"{count} clients did not attach to {session_id}")


def _events(lines: list[str]) -> list[dict]:
    return [json.loads(line) for line in lines]


def _send(daemon: DaemonProcess, session_id: str, text: str) -> None:
    with daemon.client() as client:
        client.request(c.SendMessage(client.next_id(), session_id, text))


def _end(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    if process.stdout is not None:
        process.stdout.close()


class TestChatOneShot:
    """`chat -q` sends one message, prints the answer and exits 0, in each API mode."""

    @pytest.mark.parametrize("api_mode", ["chat_completions", "anthropic_messages", "codex_responses"])
    def test_plain_answer(self, daemon: DaemonProcess, provider: ScriptedProviderProcess, api_mode: str) -> None:
        """The scripted model's answer is the output, whatever the wire protocol."""
        session_id, result = _chat(daemon, provider, NO_TOOLS, api_mode=api_mode)
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == f"[scripted model] You asked for no tools, so here is a plain answer to: {NO_TOOLS}"
        stored = json.loads(run_cli(daemon.home, "sessions", "show", session_id, "--json").stdout)
        roles = [m["message"]["role"] for m in stored["head"]]
        assert roles[-2:] == ["user", "assistant"]

    def test_tools_and_json_events(self, daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """With --json every event is a JSON line, numbered in order, tools included, ending with TurnFinished."""
        _, result = _chat(daemon, provider, "look at the machine", "--json")
        assert result.returncode == 0, result.stderr
        events = _events(result.stdout.splitlines())
        assert events[0]["type"] == "TurnStarted"
        assert events[-1]["type"] == "TurnFinished" and events[-1]["reason"] == "completed"
        seqs = [e["seq"] for e in events]
        assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
        # The model's own calls; the calls execute_code's script made name it as their parent.
        finished = [e for e in events if e["type"] == "ToolFinished" and not e["parent_call_id"]]
        assert [e["name"] for e in finished][:2] == ["terminal", "execute_code"]
        assert all(e["ok"] for e in finished[:2])
        inner = [e for e in events if e["type"] == "ToolFinished" and e["parent_call_id"]]
        assert inner and {e["parent_call_id"] for e in inner} == {finished[1]["call_id"]}
        assert "Demo complete" in events[-1]["final_text"]

    def test_unknown_session(self, daemon: DaemonProcess) -> None:
        """Attaching to a session that does not exist fails with status 2."""
        result = run_cli(daemon.home, "attach", "nosuchsession")
        assert result.returncode == 2
        assert "no session" in result.stderr


class TestAttach:
    """Several clients per session; detaching leaves it running; --since replays."""

    def test_two_clients_see_every_event(self, daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """Both attached clients get the same events; after one detaches the other still gets the next turn."""
        session_id, first = _chat(daemon, provider, NO_TOOLS)
        assert first.returncode == 0
        (one, one_lines), (two, two_lines) = _attach(daemon, session_id), _attach(daemon, session_id)
        try:
            _wait_attached(daemon, session_id, 2)
            _send(daemon, session_id, "second message, no tools")
            done = lambda line: '"TurnFinished"' in line  # noqa: E731
            seen_one, seen_two = _events(one_lines.until(done)), _events(two_lines.until(done))
            assert seen_one == seen_two
            assert [e["type"] for e in seen_one][0] == "TurnStarted"
            assert seen_one[0]["text"] == "second message, no tools"
            _end(one)  # detach one client
            _send(daemon, session_id, "third message, no tools")
            third = _events(two_lines.until(done))
            assert third[0]["text"] == "third message, no tools"
            assert third[0]["seq"] > seen_two[-1]["seq"]
        finally:
            _end(one)
            _end(two)

    def test_since_replays_and_pending_approval_is_shown_again(
        self, daemon: DaemonProcess, provider: ScriptedProviderProcess, tmp_path: Path
    ) -> None:
        """A dangerous command waits for approval; a client attaching later with --since sees it again and answers it."""
        # full-access: the target lies outside the session's writable roots, which a jail would protect.
        session_id, _ = _chat(daemon, provider, NO_TOOLS, "--sandbox", "full-access")
        target = tmp_path / "victim"
        target.mkdir()
        provider.push(
            {"tool_calls": [{"id": "call_rm", "name": "terminal", "arguments": {"command": f"rm -r {target}"}}]},
            {"text": "All done after the approval."},
        )
        first, first_lines = _attach(daemon, session_id)
        try:
            _wait_attached(daemon, session_id, 1)
            _send(daemon, session_id, "remove that directory")
            asked = _events(first_lines.until(lambda line: '"ApprovalRequested"' in line))
            approval = asked[-1]
            assert str(target) in approval["command"]
        finally:
            _end(first)
        # A new client resumes after the approval's seq: the pending request is shown again anyway.
        second, second_lines = _attach(daemon, session_id, "--since", str(approval["seq"]))
        try:
            again = _events(second_lines.until(lambda line: '"ApprovalRequested"' in line))
            assert again[-1]["request_id"] == approval["request_id"]
            with daemon.client() as client:
                client.request(c.AnswerSessionRequest(client.next_id(), session_id, approval["request_id"], "once"))
            rest = _events(second_lines.until(lambda line: '"TurnFinished"' in line))
            resolved = [e for e in rest if e["type"] == "RequestResolved"]
            assert resolved and resolved[0]["answer"] == "once"
            assert rest[-1]["final_text"] == "All done after the approval."
            assert not target.exists()
        finally:
            _end(second)
