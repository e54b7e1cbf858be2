"""What a person sees in the interactive client: every streamed token, at any width, in every client."""

from __future__ import annotations

import re

import pytest

from tests.client.pty_terminal import PtyTerminal
from tests.daemon.helpers import DaemonProcess, ScriptedProviderProcess

TOKENS = [f"tok{n}" for n in range(400)]


def _chat(daemon: DaemonProcess, provider: ScriptedProviderProcess, columns: int, lines: int) -> PtyTerminal:
    terminal = PtyTerminal(daemon.home, "chat", *provider.chat_flags(), columns=columns, lines=lines)
    terminal.wait_for(lambda text: "attached to" in text, what="the attach banner")
    return terminal


def _idle(text: str) -> bool:
    return "· /help" in text.splitlines()[-1]


def _words(text: str) -> list[str]:
    return re.findall(r"tok\d+", text)


class TestStreamedText:
    """A long streamed paragraph is on screen whole, at 80 and 140 columns."""

    @pytest.mark.parametrize(("columns", "lines"), [(80, 24), (140, 45)])
    def test_all_tokens_visible(
        self, shared_daemon: DaemonProcess, provider: ScriptedProviderProcess, columns: int, lines: int
    ) -> None:
        """All 400 tokens of a slow stream end up on screen or in its scrollback, once and in order."""
        provider.reset()
        provider.push({"text": " ".join(TOKENS), "chunk_delay": 0.005})
        terminal = _chat(shared_daemon, provider, columns, lines)
        try:
            terminal.type("stream please\r")
            text = terminal.wait_for(lambda t: "tok399" in t and _idle(t), what="the end of the stream")
            assert TOKENS == _words(text)
        finally:
            terminal.close()
