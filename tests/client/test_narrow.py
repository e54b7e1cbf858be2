"""At 80 columns nothing wraps back to the first column: help wraps under its text, rows are fitted."""

from __future__ import annotations

import re

from tests.client.pty_terminal import PtyTerminal
from tests.client.test_screen import is_idle, open_chat, stored_session
from tests.daemon.helpers import DaemonProcess, ScriptedProviderProcess

LONG_COMMAND = "echo done # " + " ".join(f"word{n}" for n in range(30))
#: One output line of 120 characters.
WIDE_OUTPUT = "printf 'x%.0s' $(seq 1 120)"


class TestEightyColumns:
    """/help, a tool's line and `sessions list` read right in an 80-column terminal."""

    def test_help_wraps_under_its_text(self, shared_daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """Every row of /help after its first is indented: a long description continues under itself."""
        provider.reset()
        with open_chat(shared_daemon, provider) as terminal:
            terminal.type("/help\r")
            text = terminal.wait_for(lambda t: "Ctrl-R searches" in t, what="/help")
        rows = text.split("commands:", 1)[1].split("anything else is", 1)[0].splitlines()[1:]
        assert rows and all(row.startswith("  ") for row in rows), text
        assert re.search(r"^ {10,}\S", text, re.MULTILINE), text  # a description's second row, under the first

    def test_tool_line_fits_its_row(self, shared_daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """A long command is cut to fit, so the duration and exit code stay on the tool's row; a long output
        line is cut too, under its indent."""
        provider.reset()
        with open_chat(shared_daemon, provider) as terminal:
            provider.push(
                {"tool_calls": [{"id": "w1", "name": "terminal", "arguments": {"command": LONG_COMMAND}}]},
                {"tool_calls": [{"id": "w2", "name": "terminal", "arguments": {"command": WIDE_OUTPUT}}]},
                {"text": "Echoed."},
            )
            terminal.type("echo it\r")
            text = terminal.wait_for(lambda t: "Echoed." in t and is_idle(t), what="the tools and the answer")
        (row,) = [row for row in text.splitlines() if row.startswith(" [1]")]
        assert re.search(r"terminal echo done # word0 .*… +\d+\.\ds ✓ exit 0$", row), text
        (output,) = [row for row in text.splitlines() if "xxxxxxxxxx" in row and not row.startswith(" [2]")]
        assert re.fullmatch(r" {5}x+…", output) and len(output) <= 80, text

    def test_sessions_list_rows_fit(self, shared_daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """`sessions list` on an 80-column terminal: one row per session, cut to fit."""
        session_id = stored_session(shared_daemon, provider)
        with PtyTerminal(shared_daemon.home, "sessions", "list", columns=80) as terminal:
            assert terminal.wait_exit() == 0
            rows = [row for row in terminal.text().splitlines() if row]
        assert rows[0].startswith("ID "), rows
        assert all(re.match(r"\w{12} ", row) for row in rows[1:]), rows
        assert [row for row in rows if row.startswith(session_id)], rows
