"""The per-session yolo toggle in the interactive client: ``--yolo``, ``/yolo``, the toolbar marker, approvals skipped."""

from __future__ import annotations

from collections.abc import Callable

from tests.client.pty_terminal import PtyTerminal
from tests.approvals.helpers import script_command, tool_result
from tests.approvals.test_policies import COMMAND, RAN
from tests.daemon.helpers import DaemonProcess, ScriptedProviderProcess

StartDaemon = Callable[..., DaemonProcess]
MARKER = "⚠ YOLO"


class TestYoloToggle:
    """``chat --yolo`` shows the marker and runs dangerous commands unasked; ``/yolo`` turns it off with a line."""

    def test_marker_and_toggle(self, start_daemon: StartDaemon, provider: ScriptedProviderProcess) -> None:
        provider.reset()
        daemon = start_daemon()
        client = PtyTerminal(daemon.home, "chat", "--yolo", *provider.chat_flags(), columns=140, lines=45)
        try:
            client.wait_for(lambda text: MARKER in text and "attached to" in text)
            script_command(provider, COMMAND)
            client.type("run the command\r")
            client.wait_for(lambda text: "finished" in text)
            assert "approval needed" not in client.text()
            assert RAN in tool_result(provider)
            client.type("/yolo\r")
            client.wait_for(lambda text: "YOLO off" in text and MARKER not in text)
            script_command(provider, COMMAND, call_id="call_asked")
            client.type("run it again\r")
            client.wait_for(lambda text: "approval needed" in text)
            client.type("deny\r")
            client.wait_for(lambda text: text.count("finished") == 2)
        finally:
            client.close()
        assert "denied by the user" in tool_result(provider, "call_asked")
