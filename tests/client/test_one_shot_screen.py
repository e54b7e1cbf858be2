"""``chat -q`` in a terminal: the answer rendered as the attached client renders it, a footer, clean lines on Ctrl-C."""

from __future__ import annotations

import re

from tests.client.pty_terminal import PtyTerminal
from tests.client.test_new_session import footers
from tests.daemon.helpers import DaemonProcess, ScriptedProviderProcess

ANSWER = "# Plan\n\nSome **bold** words.\n\n- first item\n- second item\n"


class TestOneShotScreen:
    """Markdown and a footer on a terminal; the interrupt's line on a line of its own."""

    def test_markdown_and_footer(self, shared_daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """The answer is rendered markdown, not its source, and a footer with the turn's tokens follows."""
        provider.reset()
        provider.push({"text": ANSWER, "chunks": 10, "chunk_delay": 0.01, "usage": {"prompt_tokens": 12, "completion_tokens": 8}})
        with PtyTerminal(shared_daemon.home, "chat", "-q", "plan it", *provider.chat_flags()) as terminal:
            assert terminal.wait_exit() == 0
            text = terminal.text()
        assert "Some bold words." in text and re.search(r"• first item", text), text
        assert "**" not in text and "# Plan" not in text, text
        assert [f for f in footers(text) if f.startswith("12 in · 8 out")], text

    def test_interrupt_on_its_own_line(self, shared_daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """Ctrl-C while text streams: no row holds both streamed text and the interrupting line."""
        provider.reset()
        provider.push({"text": " ".join(f"tok{n}" for n in range(600)), "chunks": 600, "chunk_delay": 0.05})
        with PtyTerminal(shared_daemon.home, "chat", "-q", "say a lot", *provider.chat_flags()) as terminal:
            terminal.wait_for(lambda t: "tok20" in t, what="the stream")
            terminal.type("\x03")
            assert terminal.wait_exit() == 130
            text = terminal.text()
        assert "interrupting the turn" in text, text
        assert not [row for row in text.splitlines() if "tok" in row and "interrupting" in row], text
        assert text.index("tok20") < text.index("interrupting the turn"), text
