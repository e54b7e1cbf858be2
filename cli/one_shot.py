"""``hermes-actors chat -q``: one message, the turn shown as it runs, the answer, exit.

With a terminal the turn is rendered like an attached client's (markdown a block
at a time, the block still streaming under a spinner, a footer after the turn);
without one only the final answer goes to stdout and the rest to stderr. ``--json`` prints every event as a JSON line.

An approval request is asked on the terminal (once / session / always / deny). Without a
terminal nobody can answer, so it is denied at once, with a hint (``--yolo``,
``approvals.mode``). Ctrl-C interrupts the turn this command started, waits briefly for it to
end, and exits 130. A session that ends (killed, the daemon stopping), a lost connection, or a
session host that went away with the turn ends the command at once with a message and status 1.
"""

from __future__ import annotations

import json
import signal
import sys
import time
from typing import Any

from rich.console import Console
from rich.status import Status
from rich.text import Text

from cli.attach_view import EventView
from control.client import ControlClient
from cli.live_text import live_rows
from control.errors import EXIT_FAILURE, DaemonNotRunning
from messages import control as c

__all__ = ["EXIT_INTERRUPTED", "INTERRUPT_GRACE_SECONDS", "run_one_shot"]

#: The exit status after Ctrl-C (128 + SIGINT), as shells report it.
EXIT_INTERRUPTED = 130
#: How long Ctrl-C waits for the interrupted turn to report that it ended.
INTERRUPT_GRACE_SECONDS = 5.0
#: The read deadline: how long a Ctrl-C may wait to be acted on.
_POLL_SECONDS = 0.2
#: Rows of the terminal the streaming text under the spinner leaves free.
_RESERVED_ROWS = 3
#: One-letter answers at the prompt.
_LETTERS = {"o": "once", "s": "session", "a": "always", "d": "deny", "n": "deny"}
_NO_TERMINAL_HINT = (
    "no terminal to ask on, so it was denied. To let this run, add --yolo (approves every dangerous command "
    "of the session), or set approvals.mode to smart or off in config.yaml"
)


class _Interrupted(Exception):
    """Ctrl-C while the approval prompt waited for a line."""


def run_one_shot(client: ControlClient, session_id: str, text: str, *, as_json: bool) -> int:
    """Send one message, show the turn, print the final answer; 0 when the turn completed."""
    return _OneShot(client, session_id, as_json).run(text)


class _OneShot:
    """The state of one ``chat -q`` run."""

    def __init__(self, client: ControlClient, session_id: str, as_json: bool) -> None:
        self.client = client
        self.session_id = session_id
        self.as_json = as_json
        self.to_terminal = sys.stdout.isatty() and not as_json
        # Answers are read from stdin only when it is a terminal (a pipe holds no person).
        self.can_ask = sys.stdin.isatty()
        self.spinner: Status | None = None
        # On a terminal the answer is rendered as the attached client renders it: markdown a block at a time,
        # the block still streaming shown under the spinner, and a footer.
        self.view = EventView(
            Console(file=sys.stdout if self.to_terminal else sys.stderr, highlight=False), session_id,
            live=self.to_terminal, on_live=self._update_spinner, show_hint=False,
        )
        self.spinner = self.view.console.status("thinking…", spinner="dots") if self.to_terminal else None
        self.interrupted = False
        self.prompting = False
        self.text = ""
        # The turn our message started (None until its TurnStarted): only its end is our answer.
        self.turn_id: int | None = None

    def run(self, text: str) -> int:
        previous = signal.signal(signal.SIGINT, self._on_sigint)
        try:
            self.text = text
            self.client.request_raw(c.Attach(self.client.next_id(), self.session_id, None))
            self.client.request_raw(c.SendMessage(self.client.next_id(), self.session_id, text))
            return self._follow()
        except DaemonNotRunning as exc:
            _error(f"{exc}; the turn's outcome is unknown (hermes-actors sessions show {self.session_id})")
            return EXIT_FAILURE
        finally:
            signal.signal(signal.SIGINT, previous)
            if self.spinner is not None:
                self.spinner.stop()

    def _on_sigint(self, signum: int, frame: Any) -> None:
        self.interrupted = True
        if self.prompting:
            raise _Interrupted

    def _follow(self) -> int:
        self.client.settimeout(_POLL_SECONDS)
        deadline: float | None = None
        while True:
            if self.interrupted and deadline is None:
                deadline = self._interrupt()
            if deadline is not None and time.monotonic() > deadline:
                _error("the turn did not confirm the interrupt in time; it may still be stopping")
                return EXIT_INTERRUPTED
            try:
                event = self.client.receive_raw()
            except TimeoutError:
                continue
            status = self._on_event(event)
            if status is not None:
                return EXIT_INTERRUPTED if self.interrupted else status

    def _interrupt(self) -> float:
        if self.spinner is not None:
            self.spinner.stop()
        self.view.end_line()  # the text so far first, so what follows starts a line of its own
        _error("interrupting the turn…")
        self.client.send(c.InterruptSession(self.client.next_id(), self.session_id))
        return time.monotonic() + INTERRUPT_GRACE_SECONDS

    def _on_event(self, event: dict[str, Any]) -> int | None:
        """Show one event; the exit status once the run is over, else None."""
        kind = event.get("type")
        if self.as_json:
            sys.stdout.write(json.dumps(event, ensure_ascii=False) + "\n")
            sys.stdout.flush()
        elif self.to_terminal or kind not in ("TextDelta", "ReasoningDelta"):
            self.view.show(event)
        if kind == "ErrorReply":
            _error(str(event.get("message")))
            return EXIT_FAILURE
        own = self.view.is_own(event)
        if kind == "SubscriberDropped" and own:
            _error(f"the session ended before the turn did ({event.get('reason')})")
            return EXIT_FAILURE
        if kind == "StatusUpdate" and own and event.get("kind") == "host_lost":
            # The turn died with its host; the session woken elsewhere will not run it again.
            _error(f"the turn was lost with it; the message is stored (hermes-actors attach {self.session_id} to go on)")
            return EXIT_FAILURE
        if kind == "ApprovalRequested" and own and not self.interrupted:
            self._answer(event)
        if kind == "TurnStarted" and own and self.turn_id is None and event.get("text") == self.text:
            self.turn_id = event["turn_id"]
        if kind == "TurnFinished" and own and event.get("turn_id") == self.turn_id:
            # A failed turn's text is its error, already shown on stderr: stdout holds answers only.
            if not self.as_json and not self.to_terminal and event.get("final_text") and event["reason"] != "error":
                print(event["final_text"])
            return 0 if event["reason"] == "completed" else EXIT_FAILURE
        self._update_spinner()
        return None

    def _update_spinner(self) -> None:
        """While the turn runs: the spinner, with the text still streaming (else what the session does)."""
        spinner = self.spinner
        if spinner is None:
            return
        view = self.view
        if not view.turn_running or self.interrupted or self.prompting:
            spinner.stop()
            return
        live = view.live_text()
        width, height = view.console.size
        rows = live_rows(live, width - 2, max(height - _RESERVED_ROWS, 1)) if live else [f"{view.activity or 'working'}…"]
        spinner.update(Text("\n".join(rows)))
        spinner.start()

    def _answer(self, request: dict[str, Any]) -> None:
        if self.spinner is not None:
            self.spinner.stop()
        on_behalf = None
        if self.can_ask:
            answer = self._ask(request)
            if answer is None:
                return  # Ctrl-C: the turn is interrupted instead
        else:
            answer, on_behalf = "deny", "nobody could be asked (chat -q without a terminal)"
            _error(f"approval needed for `{request['command']}`: {_NO_TERMINAL_HINT}")
        self.client.send(
            c.AnswerSessionRequest(self.client.next_id(), self.session_id, request["request_id"], answer, on_behalf)
        )

    def _ask(self, request: dict[str, Any]) -> str | None:
        """The answer typed on the terminal; None after Ctrl-C."""
        choices = request.get("choices") or list(dict.fromkeys(_LETTERS.values()))
        self.prompting = True
        try:
            while True:
                sys.stderr.write(f"approve? [{'/'.join(choices)}] ")
                sys.stderr.flush()
                line = sys.stdin.readline()
                if not line:
                    return "deny"  # Ctrl-D: no consent
                word = line.strip().lower()
                answer = _LETTERS.get(word, word)
                if answer in choices:
                    return answer
        except _Interrupted:
            sys.stderr.write("\n")
            return None
        finally:
            self.prompting = False


def _error(text: str) -> None:
    print(f"hermes-actors: {text}", file=sys.stderr)
