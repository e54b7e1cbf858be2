"""How a finished tool's outcome reads on the attached screen: the mark, and how its command ended."""

from __future__ import annotations

import re
from typing import Any

from tests.client.test_screen import is_idle, open_chat
from tests.daemon.helpers import DaemonProcess, ScriptedProviderProcess

_KILL_ITSELF = "import os, signal\nos.kill(os.getpid(), signal.SIGTERM)\n"


def _screen_after_tool(daemon: DaemonProcess, provider: ScriptedProviderProcess, name: str, arguments: dict[str, Any]) -> str:
    """The screen once the model called tool ``name`` and answered."""
    provider.reset()
    with open_chat(daemon, provider, columns=140) as terminal:
        provider.push({"tool_calls": [{"id": "call_k", "name": name, "arguments": arguments}]}, {"text": "It was stopped."})
        terminal.type("run it\r")
        return terminal.wait_for(lambda t: "It was stopped." in t and is_idle(t), what="the tool and the answer")


class TestSignalledTool:
    """A tool whose process a signal ended is a failure named by its signal, never `✓ exit -15`."""

    def test_script_killed_by_sigterm(self, shared_daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """execute_code whose script is ended by SIGTERM: `✗ killed by SIGTERM`."""
        text = _screen_after_tool(shared_daemon, provider, "execute_code", {"code": _KILL_ITSELF})
        assert "exit -15" not in text and "exit 143" not in text, text
        assert re.search(r"\[1\] .*execute_code .*✗ killed by SIGTERM", text), text

    def test_command_killed_by_sigterm(self, shared_daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """A terminal command whose shell is ended by SIGTERM: `✗ killed by SIGTERM`."""
        text = _screen_after_tool(shared_daemon, provider, "terminal", {"command": "kill -TERM $$"})
        assert "exit -15" not in text and "exit 143" not in text, text
        assert re.search(r"\[1\] .*terminal kill -TERM \$\$ .*✗ killed by SIGTERM", text), text
