"""A client that attaches while a turn runs shows that turn as any other: running, its tool's command, its figures."""

from __future__ import annotations

import re

from tests.client.pty_terminal import PtyTerminal
from tests.client.test_new_session import footers
from tests.client.test_screen import is_idle, open_chat, session_of
from tests.daemon.helpers import DaemonProcess, ScriptedProviderProcess

COMMAND = "sleep 3; echo slept"
USAGE = {"prompt_tokens": 7, "completion_tokens": 2}


def toolbar(text: str) -> str:
    """The last row: the toolbar."""
    return text.splitlines()[-1]


class TestAttachMidTurn:
    """The second client sees the running turn's spinner, its tool's command, and the turn's own footer."""

    def test_running_turn_shown_whole(self, shared_daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """Attached during a 3 s tool: spinner and tool in the toolbar, the tool line with its command,
        and a footer with this turn's tokens and a duration of seconds (not the session's totals)."""
        provider.reset()
        with open_chat(shared_daemon, provider) as first:
            provider.push({"text": "warm up", "usage": {"prompt_tokens": 100, "completion_tokens": 50}})
            first.type("first\r")
            first.wait_for(lambda t: "warm up" in t and len(footers(t)) == 1, what="the first turn")
            provider.push(
                {"tool_calls": [{"id": "m1", "name": "terminal", "arguments": {"command": COMMAND}}], "usage": USAGE},
                {"text": "after the sleep", "usage": USAGE},
            )
            first.type("run it\r")
            first.wait_for(lambda t: "terminal" in toolbar(t), what="the running tool")
            with PtyTerminal(shared_daemon.home, "attach", session_of(first), "--history", "0") as second:
                running = second.wait_for(lambda t: "attached to" in t and "terminal" in toolbar(t), what="the tool in the toolbar")
                assert "Ctrl-C interrupts" in toolbar(running), running
                text = second.wait_for(lambda t: "after the sleep" in t and is_idle(t) and footers(t), what="the end of the turn")
        assert re.search(r"\[1\] .*terminal sleep 3; echo slept .*✓ exit 0", text), text
        (footer,) = footers(text)
        assert footer.startswith("14 in · 4 out"), text
        seconds = float(footer.rsplit("· ", 1)[1].rstrip("s"))
        assert 3.0 <= seconds < 30.0, text
