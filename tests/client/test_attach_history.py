"""`attach --all`: every stored message first, on the screen and with --json; Ctrl-C leaves a client without a prompt."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys

from tests.client.pty_terminal import PtyTerminal
from tests.client.test_screen import is_idle
from tests.daemon.helpers import REPO, DaemonProcess, LineReader, ScriptedProviderProcess, environment, run_cli
from tests.daemon.test_sessions import _end

#: More exchanges than the default history (10 messages) shows.
_LINES = [f"line {n}, no tools" for n in range(1, 8)]


def _long_session(daemon: DaemonProcess, provider: ScriptedProviderProcess) -> str:
    """A session of seven exchanges (fourteen messages and more), its id."""
    provider.reset()
    result = run_cli(daemon.home, "chat", *provider.chat_flags(), stdin="".join(f"{line}\n" for line in _LINES), timeout=90)
    assert result.returncode == 0, result.stderr
    return re.search(r"session (\w+)", result.stderr).group(1)  # type: ignore[union-attr]  # no match fails the test on this line, which is the check


class TestAttachAll:
    """`attach --all` shows the whole conversation, and with --json prints it as lines; Ctrl-C then leaves."""

    def test_all_on_the_screen(self, shared_daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """Every message, the first one too, with nothing said to be left out."""
        session_id = _long_session(shared_daemon, provider)
        with PtyTerminal(shared_daemon.home, "attach", session_id, "--all", columns=120, lines=60) as terminal:
            text = terminal.wait_for(lambda t: "attached to" in t and is_idle(t), what="the attach banner")
            assert all(f"> {line}" in text for line in _LINES), text
            assert "earlier messages not shown" not in text
            terminal.type("\x04")
            assert terminal.wait_exit() == 0

    def test_all_as_json_then_ctrl_c(self, shared_daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """--all --json: one StoredMessage line per message, then SIGINT with no turn running leaves with 130."""
        session_id = _long_session(shared_daemon, provider)
        attach = subprocess.Popen(
            [sys.executable, "-m", "cli", "attach", session_id, "--all", "--json"],
            env=environment(shared_daemon.home), cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, text=True,
        )
        lines = LineReader(attach.stdout)
        try:
            seen = lines.until(lambda line: _LINES[-1] in line and '"assistant"' in line)
            users = [m["message"]["content"] for m in map(json.loads, seen) if m["message"].get("role") == "user"]
            assert _LINES == users
            assert all(json.loads(line)["type"] == "StoredMessage" for line in seen)
            attach.send_signal(signal.SIGINT)
            assert attach.wait(30) == 130
        finally:
            if attach.stdin is not None:
                attach.stdin.close()
            _end(attach)
