"""Piped input (item 8): lines queue as messages, and a line arriving while an approval is pending answers it."""

from __future__ import annotations

import re
from pathlib import Path

from messages import control as c
from tests.client.test_screen import stored_session
from tests.daemon.helpers import DaemonProcess, ScriptedProviderProcess, run_cli


def _wait_for_approval(daemon: DaemonProcess, session_id: str, text: str) -> dict[str, object]:
    """Send ``text`` to the session and return the approval request it leads to."""
    with daemon.client(timeout=30) as client:
        client.request_raw(c.Attach(client.next_id(), session_id, None))
        client.request_raw(c.SendMessage(client.next_id(), session_id, text))
        while True:
            event = client.receive_raw()
            if event.get("type") == "ApprovalRequested":
                return event


class TestPipedAnswers:
    """A piped line answers a pending approval, even one replayed on attach."""

    def test_echo_once_answers_the_replayed_approval(
        self, shared_daemon: DaemonProcess, provider: ScriptedProviderProcess, tmp_path: Path
    ) -> None:
        """`echo once | attach S` with an approval pending: it is approved, never sent as a message."""
        provider.reset()
        session_id = stored_session(shared_daemon, provider, "--sandbox", "full-access")
        target = tmp_path / "victim"
        target.mkdir()
        provider.push(
            {"tool_calls": [{"id": "call_rm", "name": "terminal", "arguments": {"command": f"rm -r {target}"}}]},
            {"text": "All done after the approval."},
        )
        _wait_for_approval(shared_daemon, session_id, "remove that directory")
        result = run_cli(shared_daemon.home, "attach", session_id, "--history", "0", stdin="once\n", timeout=60)
        assert result.returncode == 0, result.stdout + result.stderr
        assert "approval needed" in result.stdout
        assert "All done after the approval." in result.stdout
        assert "> once" not in result.stdout  # not a message
        assert not target.exists()


class TestPipedMessages:
    """Piped lines are a script: each becomes a turn, in order, none cutting another short."""

    def test_two_lines_two_turns(self, shared_daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """`printf 'a\\nb\\n' | chat`: the second line waits for the first turn (a slow one) to finish."""
        provider.reset()
        provider.push({"text": "the slow first answer, complete", "chunks": 10, "chunk_delay": 0.1})
        script = "first line\nsecond line, no tools\n"
        result = run_cli(shared_daemon.home, "chat", *provider.chat_flags(), stdin=script, timeout=60)
        assert result.returncode == 0, result.stdout + result.stderr
        out = result.stdout
        assert "interrupted" not in out
        order = [m.group(0) for m in re.finditer(r"> first line|the slow first answer, complete|> second line, no tools|plain answer to: second line", out)]
        assert order == ["> first line", "the slow first answer, complete", "> second line, no tools", "plain answer to: second line"]

    def test_line_sent_while_another_turn_runs(self, shared_daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """`echo X | attach S` while S runs someone else's turn: the pipe waits for X's own answer, not that turn's end."""
        provider.reset()
        session_id = stored_session(shared_daemon, provider)
        provider.push({"text": "the other client's slow answer", "chunks": 20, "chunk_delay": 0.1})
        with shared_daemon.client(timeout=30) as client:
            client.request_raw(c.Attach(client.next_id(), session_id, None))
            client.request_raw(c.SendMessage(client.next_id(), session_id, "a slow one from elsewhere"))
            while client.receive_raw().get("type") != "TurnStarted":
                pass
            result = run_cli(shared_daemon.home, "attach", session_id, "--history", "0", stdin="mine, no tools\n", timeout=60)
        assert result.returncode == 0, result.stdout + result.stderr
        assert "plain answer to: mine, no tools" in result.stdout, result.stdout
