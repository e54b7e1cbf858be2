"""An interrupted turn as the attached client shows it: its footer counts what streamed, its subagents end visibly."""

from __future__ import annotations

import re

from tests.client.test_new_session import footers
from tests.client.test_screen import TOKENS, is_idle, open_chat
from tests.daemon.helpers import DaemonProcess, ScriptedProviderProcess


class TestInterruptedFooter:
    """The tokens an interrupted reply streamed are counted."""

    def test_footer_counts_streamed_tokens(self, shared_daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """Ctrl-C mid-stream: the footer's in and out are not 0 (the provider answered that much)."""
        provider.reset()
        with open_chat(shared_daemon, provider) as terminal:
            provider.push({"text": " ".join(TOKENS), "chunk_delay": 0.05})
            terminal.type("a long one\r")
            terminal.wait_for(lambda t: "tok40" in t, what="the stream")
            terminal.type("\x03")
            text = terminal.wait_for(lambda t: "[turn interrupted" in t and is_idle(t) and footers(t), what="the footer")
            (footer,) = footers(text)
            tokens_in, tokens_out = (int(n) for n in re.match(r"(\d+) in · (\d+) out", footer).groups())  # type: ignore[union-attr]
            assert tokens_in > 0 and tokens_out >= 40, text
