"""The attach client in a pipe: stdin lines as messages, Ctrl-C as an interrupt, a daemon with no stderr."""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import sys
import time

import pytest

from control.client import encode_request
from messages import control as c
from tests.daemon.helpers import REPO, DaemonProcess, LineReader, ScriptedProviderProcess, environment, run_cli
from tests.daemon.test_recovery import _paths, _tree, _wait_for_path
from tests.daemon.test_sessions import NO_TOOLS, _chat, _end, _wait_attached


class TestPipedAttach:
    """Without a terminal, attach reads messages from stdin and prints plain text."""

    def test_stdin_lines_are_messages(self, shared_daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """Each line is sent; at end of input the client waits for the turns, prints plain text and exits 0."""
        provider.reset()
        session_id, _ = _chat(shared_daemon, provider, NO_TOOLS)
        result = run_cli(shared_daemon.home, "attach", session_id, stdin="from a pipe, no tools\n", timeout=60)
        assert result.returncode == 0, result.stderr
        assert "from a pipe, no tools" in result.stdout
        assert "\x1b[" not in result.stdout  # no control codes in a pipe
        assert f"attached to {session_id}" in result.stdout

    def test_slash_commands(self, shared_daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """/usage, an unknown command's help and /new (same provider, switching sessions) work from a pipe."""
        provider.reset()
        script = "/usage\n/whatever\nfirst message, no tools\n/new\nin the new session, no tools\n"
        result = run_cli(shared_daemon.home, "chat", *provider.chat_flags(), stdin=script, timeout=60)
        assert result.returncode == 0, result.stderr
        session_id = re.search(r"session (\w+)", result.stderr).group(1)  # type: ignore[union-attr]  # no match fails the test on this line, which is the check
        out = result.stdout
        assert "no usage reported yet" in out
        assert "unknown command /whatever" in out
        match = re.search(r"new session (\w+)", out)
        assert match and match.group(1) != session_id
        assert "in the new session, no tools" in out.split(match.group(0), 1)[1]
        listed = json.loads(run_cli(shared_daemon.home, "sessions", "list", "--json").stdout)["sessions"]
        new = next(s for s in listed if s["id"] == match.group(1))
        assert new["message_count"] >= 2

    @pytest.mark.parametrize(
        ("typed", "answer"),
        [
            ([("3. blue", "2")], "green"),
            ([("4. Other (type your answer)", "4"), ("type your answer:", "teal")], "teal"),
        ],
        ids=["a choice number", "other, then the user's own words"],
    )
    def test_clarify_answered_at_the_prompt(
        self, shared_daemon: DaemonProcess, provider: ScriptedProviderProcess, typed: list[tuple[str, str]], answer: str
    ) -> None:
        """A question from the model is shown inline with its choices and an automatic "Other"; the next line
        answers it: a choice number, or "Other" and then the answer itself."""
        provider.reset()
        session_id, _ = _chat(shared_daemon, provider, NO_TOOLS)
        question = {"question": "Which colour?", "choices": ["red", "green", "blue"]}
        provider.push(
            {"tool_calls": [{"id": "call_ask", "name": "clarify", "arguments": question}]},
            {"text": "Noted."},
        )
        attach = subprocess.Popen(
            [sys.executable, "-m", "cli", "attach", session_id],
            env=environment(shared_daemon.home), cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, text=True,
        )
        lines = LineReader(attach.stdout)
        try:
            assert attach.stdin is not None
            attach.stdin.write("ask me something\n")
            attach.stdin.flush()
            seen: list[str] = []
            for shown, line in typed:
                seen += lines.until(lambda text, shown=shown: shown in text)
                attach.stdin.write(f"{line}\n")
                attach.stdin.flush()
            assert any(text.startswith("? Which colour?") for text in seen)
            attach.stdin.close()
            rest = lines.until(lambda text: "Noted." in text)
            assert any(f": {answer} (by the user at hermes-actors attach (pid " in text for text in rest)
            assert attach.wait(30) == 0
        finally:
            _end(attach)
        stored = json.loads(run_cli(shared_daemon.home, "sessions", "show", session_id, "--head", "50", "--json").stdout)
        result = next(m["message"]["content"] for m in stored["head"] if m["message"].get("tool_call_id") == "call_ask")
        assert json.loads(result)["user_response"] == answer

    def test_ctrl_c_interrupts_the_turn(self, shared_daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """SIGINT to an attached client interrupts the running turn; the client stays attached."""
        provider.reset()
        session_id, _ = _chat(shared_daemon, provider, NO_TOOLS)
        provider.push({"text": "too slow", "delay_first_byte": 60})
        attach = subprocess.Popen(
            [sys.executable, "-m", "cli", "attach", session_id, "--json"],
            env=environment(shared_daemon.home), cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, text=True,
        )
        lines = LineReader(attach.stdout)
        try:
            assert attach.stdin is not None
            attach.stdin.write("this turn will be interrupted\n")
            attach.stdin.flush()
            lines.until(lambda line: '"TurnStarted"' in line)
            _wait_for_path(shared_daemon, lambda p: p.startswith(f"sessions/session:{session_id}/turn"))
            attach.send_signal(signal.SIGINT)
            finished = json.loads(lines.until(lambda line: '"TurnFinished"' in line)[-1])
            assert finished["reason"] == "interrupted"
            assert attach.poll() is None
        finally:
            if attach.stdin is not None:
                attach.stdin.close()
            _end(attach)
            provider.reset()


class TestClientVanishes:
    """A client killed mid-turn leaves the session working and counting no subscriber."""

    def test_sigkill_attached_client(self, shared_daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """The turn completes without the client; the session then has no subscriber left."""
        provider.reset()
        session_id, _ = _chat(shared_daemon, provider, NO_TOOLS)
        provider.push({"text": "finished without anyone watching", "delay_first_byte": 1.0})
        attach = subprocess.Popen(
            [sys.executable, "-m", "cli", "attach", session_id, "--json"],
            env=environment(shared_daemon.home), cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, text=True,
        )
        lines = LineReader(attach.stdout)
        assert attach.stdin is not None
        attach.stdin.write("nobody will see the answer\n")
        attach.stdin.flush()
        lines.until(lambda line: '"TurnStarted"' in line)
        attach.kill()
        attach.wait()
        lines.drain()
        attach.stdin.close()
        assert attach.stdout is not None
        attach.stdout.close()
        deadline = time.monotonic() + 30
        while True:
            snapshot = json.loads(run_cli(shared_daemon.home, "inspect", session_id, "--json").stdout)
            if "error" in snapshot:
                # A chat -q session hibernates once its turn is over and no subscriber is left: both hold.
                break
            turn_running = f"sessions/session:{session_id}/turn" in _paths(_tree(shared_daemon))
            if snapshot["details"]["turns"] >= 2 and not turn_running and snapshot["details"]["subscribers"] == 0:
                break
            assert time.monotonic() < deadline, snapshot
            time.sleep(0.2)
        shown = json.loads(run_cli(shared_daemon.home, "sessions", "show", session_id, "--json").stdout)
        assert (shown["head"] + shown["tail"])[-1]["message"]["content"] == "finished without anyone watching"
        provider.reset()


class TestLostStderr:
    """A daemon whose stderr pipe is gone keeps working."""

    def test_closed_stderr(self, home, provider: ScriptedProviderProcess) -> None:  # type: ignore[no-untyped-def]  # pytest fixtures, typed by their fixture functions
        """With its log pipe closed the daemon still serves sessions and stops cleanly."""
        provider.reset()
        daemon = subprocess.Popen(
            [sys.executable, "-m", "cli", "daemon"], env=environment(home), cwd=REPO,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )
        assert daemon.stderr is not None
        try:
            deadline = time.monotonic() + 30
            while run_cli(home, "status").returncode != 0:
                assert time.monotonic() < deadline and daemon.poll() is None
                time.sleep(0.1)
            daemon.stderr.close()  # every log line from now on hits a broken pipe
            result = run_cli(home, "chat", "-q", NO_TOOLS, *provider.chat_flags(), timeout=60)
            assert result.returncode == 0, result.stderr
            assert NO_TOOLS in result.stdout
            assert run_cli(home, "stop").returncode == 0
            assert daemon.wait(15) == 0
        finally:
            if daemon.poll() is None:
                daemon.kill()
                daemon.wait()


class TestStuckSubscriber:
    """A client that stops reading never slows the session or its other clients."""

    def test_stuck_client(self, shared_daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """A 4,000-chunk answer reaches a reading client in full while a stuck client holds its socket."""
        provider.reset()
        session_id, _ = _chat(shared_daemon, provider, NO_TOOLS)
        words = [f"w{i}" for i in range(4000)]
        provider.push({"text": " ".join(words), "chunks": 4000})
        stuck = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        stuck.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        stuck.connect(str(shared_daemon.paths.socket))
        try:
            stuck.sendall(encode_request(c.Hello(c.PROTOCOL_VERSION, "stuck", 0)))
            stuck.sendall(encode_request(c.Attach("1", session_id, None)))
            with shared_daemon.client() as client:
                _wait_attached(shared_daemon, session_id, 1)
                client.request(c.Attach(client.next_id(), session_id, None))
                client.request(c.SendMessage(client.next_id(), session_id, "a long answer please"))
                text: list[str] = []
                started = time.monotonic()
                while True:
                    event = client.receive()
                    if type(event).__name__ == "TextDelta":
                        text.append(event.text)
                    if type(event).__name__ == "TurnFinished":
                        break
                assert time.monotonic() - started < 30
            assert "".join(text).split() == words
        finally:
            stuck.close()
        provider.reset()
