"""``hermes-actors chat -q``: one message, the turn shown as it runs, the answer, exit.

With a terminal the turn is rendered like an attached client's (a spinner while
nothing streams); without one only the final answer goes to stdout and the
rest to stderr. ``--json`` prints every event as a JSON line.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from rich.console import Console

from actors.platform.cli.attach_view import EventView
from actors.platform.cli.client import ControlClient
from actors.platform.errors import EXIT_FAILURE
from messages import control as c

__all__ = ["run_one_shot"]


def run_one_shot(client: ControlClient, session_id: str, text: str, *, as_json: bool) -> int:
    """Send one message, show the turn, print the final answer; 0 when the turn completed."""
    client.request_raw(c.Attach(client.next_id(), session_id, None))
    client.request_raw(c.SendMessage(client.next_id(), session_id, text))
    to_terminal = sys.stdout.isatty() and not as_json
    view = EventView(Console(file=sys.stdout if to_terminal else sys.stderr, highlight=False), session_id)
    spinner = view.console.status("thinking…", spinner="dots") if to_terminal else None
    client.settimeout(None)  # a turn may stay silent for long (a slow tool, a slow model)
    try:
        while True:
            event = client.receive_raw()
            kind = event.get("type")
            if spinner is not None and kind in ("TextDelta", "ReasoningDelta"):
                spinner.stop()  # before the text, so it never lands on the spinner's line
            if as_json:
                sys.stdout.write(json.dumps(event, ensure_ascii=False) + "\n")
                sys.stdout.flush()
            elif to_terminal or kind not in ("TextDelta", "ReasoningDelta"):
                view.show(event)
            if spinner is not None:
                _update_spinner(spinner, view, kind)
            if kind == "ErrorReply":
                print(f"hermes-actors: {event.get('message')}", file=sys.stderr)
                return EXIT_FAILURE
            if kind == "TurnFinished" and view.is_own(event):
                if not as_json and not to_terminal and event.get("final_text"):
                    print(event["final_text"])
                return 0 if event["reason"] == "completed" else EXIT_FAILURE
    finally:
        if spinner is not None:
            spinner.stop()


def _update_spinner(spinner: Any, view: EventView, kind: str | None) -> None:
    """A spinner while the session works and nothing streams; hidden while text streams."""
    if kind in ("TextDelta", "ReasoningDelta", "TurnFinished") or not view.turn_running or view.streaming:
        spinner.stop()
    else:
        spinner.update(f"{view.activity or 'working'}…")
        spinner.start()
