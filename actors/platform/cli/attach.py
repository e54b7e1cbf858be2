"""``hermes-actors chat`` and ``attach``: a client attached to a session.

The main thread reads the socket and renders; input runs on its own thread
(``prompt_toolkit`` on a terminal, plain lines from a pipe) and only sends.
Ctrl-C interrupts the turn, Ctrl-D or ``/detach`` detaches (the session goes
on). Neither Trio nor the provider SDKs are imported here.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from typing import Any

from rich.console import Console

from actors.platform.cli.attach_view import EventView
from actors.platform.cli.autostart import connect_or_start
from actors.platform.cli.client import ControlClient
from actors.platform.cli.one_shot import run_one_shot
from actors.platform.errors import EXIT_FAILURE, EXIT_NOT_FOUND, DaemonNotRunning, RequestFailed
from actors.platform.paths import DaemonPaths, home_from_env
from messages import control as c
from messages.paths import session_path

__all__ = ["Attachment", "run_attach_command"]

#: How long /new waits for the daemon to create the session before input goes on.
SWITCH_TIMEOUT_SECONDS = 30.0
_SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
_HELP = (
    "/detach (or Ctrl-D) leave, the session goes on · /stop (or Ctrl-C) interrupt the turn · /steer TEXT · "
    "/compress [TOPIC] · /reset-tools · /usage · /yolo [on|off] approve every dangerous command · "
    "/new start a new session · anything else is a message "
    "(or the answer to a pending approval or question)"
)


def run_attach_command(args: argparse.Namespace) -> int:
    """The ``chat`` and ``attach`` commands; the exit status."""
    paths = DaemonPaths(home_from_env())
    with connect_or_start(paths, client=f"hermes-actors {args.command}") as client:
        try:
            if args.command == "chat":
                created = client.request_raw(
                    c.CreateSession(
                        client.next_id(), cwd=os.getcwd(), model=args.model, provider=args.provider,
                        base_url=args.base_url, api_mode=args.api_mode, title=args.title, sandbox=args.sandbox,
                    )
                )
                session_id = created["session_id"]
                print(f"session {session_id}", file=sys.stderr)
                if args.yolo:
                    client.request_raw(c.SetSessionYolo(client.next_id(), session_id, True))
                if args.query is not None:
                    return run_one_shot(client, session_id, args.query, as_json=args.json)
                provider = {
                    "model": args.model, "provider": args.provider, "base_url": args.base_url, "api_mode": args.api_mode,
                    "sandbox": args.sandbox,
                }
                return Attachment(client, session_id, as_json=args.json, provider=provider, yolo=args.yolo).run(since=None)
            if args.yolo:
                client.request_raw(c.SetSessionYolo(client.next_id(), args.session, True))
            return Attachment(client, args.session, as_json=args.json, yolo=args.yolo).run(since=args.since)
        except RequestFailed as exc:
            print(f"hermes-actors: {exc}", file=sys.stderr)
            return EXIT_NOT_FOUND if exc.code in ("not_found", "invalid") else EXIT_FAILURE


class Attachment:
    """An interactive (or piped) attachment to one session.

    Args:
        client: the connection, after its Hello.
        session_id: the session to attach to.
        as_json: print events as JSON lines instead of rendering them.
        provider: the provider flags ``/new`` sessions are created with (``chat`` passes its
            own; empty means the daemon's ``config.yaml``).
        yolo: the session's yolo toggle is on (``--yolo``); the toolbar marks it.
    """

    def __init__(
        self, client: ControlClient, session_id: str, *, as_json: bool = False, provider: dict[str, str | None] | None = None,
        yolo: bool = False,
    ) -> None:
        self.client = client
        self.yolo = yolo
        self.provider = provider or {}
        self.session_id = session_id
        self.as_json = as_json
        self.interactive = sys.stdin.isatty() and sys.stdout.isatty() and not as_json
        self.view = EventView(Console(highlight=False, force_terminal=None if self.interactive else False), session_id)
        self.done = threading.Event()
        self.sent_messages = 0
        self.input_closed = False
        # Invariant: the turn count we wait for before leaving once a pipe's input has ended.
        self._finished_turns = 0
        # Set except while a /new waits for its session.
        self._switched = threading.Event()
        self._switched.set()
        # Set by SIGINT, acted on by the main loop (a KeyboardInterrupt could land between a
        # read and its buffering, or in the middle of printing an event, and lose either).
        self._interrupt_requested = threading.Event()

    # -- sending (input thread) ---------------------------------------------------------------------

    def _send(self, message: Any) -> None:
        try:
            self.client.send(message)
        except DaemonNotRunning:
            self.done.set()

    def interrupt(self) -> None:
        """Interrupt the running turn (Ctrl-C, /stop)."""
        self._send(c.InterruptSession(self.client.next_id(), self.session_id))
        self.view.line("[interrupt sent]", style="dim")

    def detach(self) -> None:
        """Leave; the session keeps running."""
        self._send(c.Detach(self.client.next_id(), self.session_id))
        self.done.set()

    def command(self, line: str) -> None:
        """Act on one input line: a slash command, an answer, or a message."""
        text = line.strip()
        if not text:
            return
        word, _, rest = text.partition(" ")
        rid = self.client.next_id()
        if word == "/detach":
            self.detach()
        elif word == "/stop":
            self.interrupt()
        elif word == "/steer" and rest:
            self._send(c.SteerSession(rid, self.session_id, rest))
        elif word == "/compress":
            self._send(c.CompressSession(rid, self.session_id, rest or None))
        elif word == "/reset-tools":
            self._send(c.ResetSessionTools(rid, self.session_id))
        elif word == "/yolo":
            # Every attached client sees the change (a StatusUpdate of kind "yolo"), this one too.
            self._send(c.SetSessionYolo(rid, self.session_id, rest == "on" if rest in ("on", "off") else not self.yolo))
        elif word == "/usage":
            self.view.line(self.view.usage_text())
        elif word == "/new":
            # Hold further input until the switch is done, so the next line goes to the new session.
            self._switched.clear()
            self._send(c.CreateSession(rid, cwd=os.getcwd(), **self.provider))
            self._switched.wait(SWITCH_TIMEOUT_SECONDS)
        elif word.startswith("/"):
            self.view.line(_HELP, style="dim")
        elif self.view.pending:
            self._answer(text)
        else:
            self.sent_messages += 1
            self._send(c.SendMessage(rid, self.session_id, text))

    def _answer(self, text: str) -> None:
        pending_id, request = next(iter(self.view.pending.items()))
        choices = request.get("choices") or []
        if text.isdigit() and 1 <= int(text) <= len(choices):
            text = choices[int(text) - 1]
        self._send(c.AnswerSessionRequest(self.client.next_id(), self.session_id, pending_id, text))

    def _prompt_input(self) -> None:
        from prompt_toolkit import PromptSession
        from prompt_toolkit.patch_stdout import patch_stdout

        session: PromptSession[str] = PromptSession()
        with patch_stdout(raw=True):
            while not self.done.is_set():
                try:
                    line = session.prompt(self._prompt_text, bottom_toolbar=self._toolbar, refresh_interval=0.1)
                except KeyboardInterrupt:
                    self.interrupt()
                    continue
                except EOFError:
                    self.detach()
                    return
                self.command(line)

    def _pipe_input(self) -> None:
        for line in sys.stdin:
            if self.done.is_set():
                return
            self.command(line)
        self.input_closed = True

    def _prompt_text(self) -> str:
        return "answer> " if self.view.pending else "> "

    def _toolbar(self) -> str:
        yolo = " ⚠ YOLO ·" if self.yolo else ""
        if not self.view.turn_running:
            return f"{yolo} session {self.session_id} · /help"
        frame = _SPINNER[int(time.monotonic() * 10) % len(_SPINNER)]
        return f"{yolo} {frame} {self.view.activity or 'working'} · Ctrl-C interrupts"

    # -- receiving (main thread) --------------------------------------------------------------------------

    def run(self, since: int | None) -> int:
        """Attach, serve input and events until detached; the exit status."""
        self.client.request_raw(c.Attach(self.client.next_id(), self.session_id, since))
        if not self.as_json:
            self.view.line(f"attached to {self.session_id} · /help for commands", style="dim")
        reader = self._prompt_input if self.interactive else self._pipe_input
        threading.Thread(target=reader, name="hermes-actors-input", daemon=True).start()
        previous_term = signal.signal(signal.SIGTERM, lambda *_: self.done.set())
        previous_int = signal.signal(signal.SIGINT, lambda *_: self._interrupt_requested.set())
        # The read deadline bounds how long a Ctrl-C waits to be acted on.
        self.client.settimeout(0.2)
        try:
            while not self.done.is_set():
                if self._interrupt_requested.is_set():
                    self._interrupt_requested.clear()
                    self.interrupt()
                try:
                    self._dispatch(self.client.receive_raw())
                except TimeoutError:
                    continue
        except DaemonNotRunning as exc:
            self.view.line(f"[{exc}]", style="red")
            return EXIT_FAILURE
        finally:
            signal.signal(signal.SIGTERM, previous_term)
            signal.signal(signal.SIGINT, previous_int)
        return 0

    def _dispatch(self, message: dict[str, Any]) -> None:
        kind = message.get("type")
        if "seq" in message:
            if message.get("session_id") != self.session_id:
                return
            if kind == "StatusUpdate" and message.get("kind") == "yolo":
                self.yolo = str(message.get("text")).startswith("YOLO on")
            if self.as_json:
                sys.stdout.write(json.dumps(message, ensure_ascii=False) + "\n")
                sys.stdout.flush()
                self.view.last_seq = max(self.view.last_seq, message["seq"])
            else:
                self.view.show(message)
            if kind == "SubscriberDropped" and not self.done.is_set():
                # Resume where we were: the session's replay buffer still has what we missed.
                self._send(c.Attach(self.client.next_id(), self.session_id, self.view.last_seq))
            if kind == "TurnFinished" and self.view.is_own(message):
                self._finished_turns += 1
                if self.input_closed and self.sent_messages and self._finished_turns >= self.sent_messages:
                    self.done.set()
        elif kind == "ErrorReply":
            self.view.line(f"error: {message.get('message')}", style="red")
            self._switched.set()  # a failed /new must not hold the input forever
        elif kind == "SessionCreated":
            self._send(c.Detach(self.client.next_id(), self.session_id))
            self.session_id = message["session_id"]
            self.view.session_path = session_path(self.session_id)
            # A pipe's exit waits for the turns of the session it is attached to now.
            self.sent_messages = self._finished_turns = 0
            self._send(c.Attach(self.client.next_id(), self.session_id, None))
            self.view.line(f"new session {self.session_id}", style="dim")
            self._switched.set()
