"""How ``chat -q`` ends when it is not the turn that ends it: Ctrl-C, a killed session, a stopped daemon."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable

from tests.client.pty_terminal import PtyTerminal
from tests.daemon.helpers import REPO, DaemonProcess, LineReader, ScriptedProviderProcess, environment, run_cli

StartDaemon = Callable[..., DaemonProcess]
# A reply that streams for about a minute: long enough to be cut short by anything the test does.
SLOW_REPLY = {"text": " ".join(f"tok{i}" for i in range(600)), "chunks": 600, "chunk_delay": 0.1}
PROMPT_EXIT_SECONDS = 10.0


def _running_turn(daemon: DaemonProcess, session_id: str) -> bool:
    listed = json.loads(run_cli(daemon.home, "ps", "--json").stdout)["sessions"]
    return any(s["session_id"] == session_id and s["turn_running"] for s in listed)


def _streaming_one_shot(daemon: DaemonProcess, provider: ScriptedProviderProcess) -> tuple[subprocess.Popen[str], LineReader, str]:
    """``chat -q`` in a pipe, once the slow reply streams; the process, its stderr lines and the session id."""
    process = subprocess.Popen(
        [sys.executable, "-m", "cli", "chat", "-q", "say a lot", *provider.chat_flags()],
        env=environment(daemon.home), cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True,
    )
    lines = LineReader(process.stderr)
    seen = lines.until(lambda line: line.startswith("session "))
    session_id = re.search(r"session (\w+)", seen[-1]).group(1)  # type: ignore[union-attr]  # no match fails the test on this line, which is the check
    deadline = time.monotonic() + 30
    while not _running_turn(daemon, session_id):
        assert time.monotonic() < deadline, "the turn never started"
        time.sleep(0.05)
    return process, lines, session_id


def _end(process: subprocess.Popen[str], lines: LineReader) -> None:
    if process.poll() is None:
        process.kill()
    process.wait(10)
    lines.drain()
    assert process.stderr is not None
    process.stderr.close()


class TestCtrlC:
    """Ctrl-C on ``chat -q`` interrupts the turn it started, then exits 130."""

    def test_ctrl_c_in_a_terminal_stops_the_turn(self, start_daemon: StartDaemon, provider: ScriptedProviderProcess) -> None:
        provider.reset()
        daemon = start_daemon()
        provider.push(SLOW_REPLY)
        client = PtyTerminal(daemon.home, "chat", "-q", "say a lot", *provider.chat_flags(), columns=140, lines=45)
        try:
            screen = client.wait_for(lambda text: "tok5" in text)
            session_id = re.search(r"session (\w+)", screen).group(1)  # type: ignore[union-attr]  # no match fails the test on this line, which is the check
            client.type("\x03")
            assert 130 == client.wait_exit(PROMPT_EXIT_SECONDS)
            assert "interrupted" in client.text()
        finally:
            client.close()
        assert not _running_turn(daemon, session_id)
        # Nothing streams any more: the stored answer is the partial one, not all 600 tokens.
        shown = json.loads(run_cli(daemon.home, "sessions", "show", session_id, "--head", "20", "--json").stdout)
        assert "tok599" not in json.dumps(shown)


class TestSessionGone:
    """A killed session, a stopped daemon: ``chat -q`` ends at once with a message and status 1."""

    def test_kill_session(self, start_daemon: StartDaemon, provider: ScriptedProviderProcess) -> None:
        provider.reset()
        daemon = start_daemon()
        provider.push(SLOW_REPLY)
        process, lines, session_id = _streaming_one_shot(daemon, provider)
        try:
            killed = run_cli(daemon.home, "kill", session_id)
            assert 0 == killed.returncode, killed.stderr
            lines.until(lambda line: "the session ended before the turn did" in line, timeout=PROMPT_EXIT_SECONDS)
            assert 1 == process.wait(PROMPT_EXIT_SECONDS)
        finally:
            _end(process, lines)

    def test_daemon_stops(self, start_daemon: StartDaemon, provider: ScriptedProviderProcess) -> None:
        provider.reset()
        daemon = start_daemon()
        provider.push(SLOW_REPLY)
        process, lines, _ = _streaming_one_shot(daemon, provider)
        try:
            daemon.signal(signal.SIGTERM)
            said = lines.until(lambda line: line.startswith("hermes-actors: "), timeout=PROMPT_EXIT_SECONDS)
            assert not any("Traceback" in line for line in said)
            assert 1 == process.wait(PROMPT_EXIT_SECONDS)
        finally:
            _end(process, lines)
