"""Tool lines in the attached client: what a tool did, shown as it is."""

from __future__ import annotations

from tests.client.test_screen import is_idle, open_chat
from tests.daemon.helpers import DaemonProcess, ScriptedProviderProcess


class TestVerbatim:
    """A tool's arguments and output are shown character for character."""

    def test_emoji_codes_stay_text(self, shared_daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """`root:x:0:0` in a command and its output is not turned into `root❌0:0`, live or with /show."""
        provider.reset()
        with open_chat(shared_daemon, provider) as terminal:
            provider.push(
                {"tool_calls": [{"id": "e1", "name": "terminal", "arguments": {"command": "echo root:x:0:0 :smile:"}}]},
                {"text": "Echoed."},
            )
            terminal.type("echo it\r")
            terminal.wait_for(lambda t: "Echoed." in t and is_idle(t), what="the tool and the answer")
            terminal.type("/show 1\r")
            text = terminal.wait_for(lambda t: t.count("root:x:0:0 :smile:") >= 4, what="/show's output")
            assert "❌" not in text and "😄" not in text, text
