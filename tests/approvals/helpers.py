"""What the approval tests share: a daemon configured by ``config.yaml``, scripted tool calls, and
what the model was told. (A client in a pseudo-terminal is ``tests.client.pty_terminal``.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.daemon.helpers import ScriptedProviderProcess

def write_config(home: Path, text: str) -> None:
    """``home/config.yaml`` with ``text``."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.yaml").write_text(text)


def script_command(provider: ScriptedProviderProcess, command: str, *extra: dict[str, Any], call_id: str = "call_cmd") -> None:
    """The model runs ``command`` with the terminal tool, then (after ``extra`` steps) says "finished"."""
    provider.push(
        {"tool_calls": [{"id": call_id, "name": "terminal", "arguments": {"command": command}}]},
        *extra,
        {"text": "finished"},
    )


def tool_result(provider: ScriptedProviderProcess, call_id: str = "call_cmd") -> str:
    """The terminal result the model was given for ``call_id`` (the newest request that holds it)."""
    for request in reversed(provider.requests()):
        body = request.get("body")
        messages = body.get("messages", []) if isinstance(body, dict) else []
        for message in messages:
            if message.get("role") == "tool" and message.get("tool_call_id") == call_id:
                return str(message["content"])
    raise AssertionError(f"no request carried the result of {call_id}")
