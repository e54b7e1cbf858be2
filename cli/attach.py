"""``hermes-actors chat`` and ``attach``: a client attached to a session.

The main thread reads the socket and renders; input runs on its own thread
(``prompt_toolkit`` on a terminal, plain lines from a pipe) and only sends.
Ctrl-C interrupts the turn (twice at an idle prompt: leave), Ctrl-D or
``/detach`` detaches (the session goes on). However the client ends, the
terminal gets its modes back and the last line says why. Neither Trio nor the
provider SDKs are imported here.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import signal
import sys
import textwrap
import threading
from collections.abc import Iterator
from typing import Any, TypedDict

from rich.console import Console

from cli.attach_input import PromptInput, TerminalModes
from cli.attach_view import EventView
from cli.autostart import connect_or_start
from cli.checkpoints_command import format_checkpoints
from control.client import ControlClient
from cli.one_shot import EXIT_INTERRUPTED, run_one_shot
from cli.slash import COMMANDS, SlashCommandError, parse_command
from cli.user_text import replace_undecodable, warn_replaced
from control.errors import EXIT_FAILURE, EXIT_NOT_FOUND, DaemonNotRunning, PlatformError, RequestFailed
from control.paths import DaemonPaths, home_from_env
from messages import control as c

__all__ = ["DEFAULT_HISTORY", "Attachment", "run_attach_command"]

#: How long /new waits for the daemon to create the session before input goes on.
SWITCH_TIMEOUT_SECONDS = 30.0
#: Stored messages shown when attaching (``--history``); ``--all`` shows every one.
DEFAULT_HISTORY = 10
#: How long a piped client waits for the attach replay (a pending approval) before reading stdin.
REPLAY_TIMEOUT_SECONDS = 10.0
#: How long leaving waits for the daemon to delete an empty session this client created.
_FORGET_TIMEOUT_SECONDS = 10.0
#: The most a piped client reads of its input at once.
_READ_SIZE = 65536
#: How many of the latest stored messages /show N looks through for the tool's result.
_SHOW_SEARCH_MESSAGES = 500
#: How a session's reason for dropping a subscriber that fell behind begins (anything else: the session stopped).
_SLOW_DROP = "too slow"
#: What the daemon's acknowledgement says when it says nothing itself.
_ACK_FALLBACK = {
    "/steer": "steered: will reach the model with the next tool result",
    "/compress": "compression requested",
    "/reset-tools": "tools reset",
    "/stop": "interrupt requested",
}


def run_attach_command(args: argparse.Namespace) -> int:
    """The ``chat`` and ``attach`` commands; the exit status."""
    paths = DaemonPaths(home_from_env())
    if sys.stdin.isatty() and not (args.command == "chat" and args.query is not None):
        # The prompt's library loads while the daemon answers (a third of the time to the prompt).
        threading.Thread(target=importlib.import_module, args=("prompt_toolkit.shortcuts",), daemon=True).start()
    with connect_or_start(paths, client=f"hermes-actors {args.command}") as client:
        try:
            if args.command == "chat":
                created = client.request_raw(
                    c.CreateSession(
                        client.next_id(), cwd=os.getcwd(), model=args.model, provider=args.provider,
                        base_url=args.base_url, api_mode=args.api_mode, title=args.title, sandbox=args.sandbox,
                        limits=dict(args.limit) or None, one_shot=args.query is not None,
                    )
                )
                session_id = created["session_id"]
                print(f"session {session_id}", file=sys.stderr)
                if args.yolo:
                    client.request_raw(c.SetSessionYolo(client.next_id(), session_id, True))
                if args.query is not None:
                    return run_one_shot(client, session_id, args.query, as_json=args.json)
                provider = NewSessionFlags({
                    "model": args.model, "provider": args.provider, "base_url": args.base_url, "api_mode": args.api_mode,
                    "sandbox": args.sandbox,
                })
                return Attachment(
                    client, session_id, as_json=args.json, provider=provider, history=0, yolo=args.yolo, created=True
                ).run(since=None)
            session_id = client.session_id_for(args.session)
            if args.yolo:
                client.request_raw(c.SetSessionYolo(client.next_id(), session_id, True))
            # --json is read by programs: it prints stored messages only when asked for them.
            history = None if args.all else args.history if args.history is not None else 0 if args.json else DEFAULT_HISTORY
            return Attachment(client, session_id, as_json=args.json, history=history, yolo=args.yolo).run(since=args.since)
        except RequestFailed as exc:
            print(f"hermes-actors: {exc}", file=sys.stderr)
            return EXIT_NOT_FOUND if exc.code in ("not_found", "invalid") else EXIT_FAILURE


class NewSessionFlags(TypedDict, total=False):
    """The flags of ``chat`` that ``/new`` passes on to the sessions it creates (``CreateSession``'s fields)."""

    model: str | None
    provider: str | None
    base_url: str | None
    api_mode: str | None
    sandbox: str | None


class Attachment:
    """An interactive (or piped) attachment to one session.

    Args:
        client: the connection, after its Hello.
        session_id: the session to attach to.
        as_json: print events as JSON lines instead of rendering them.
        provider: the provider flags ``/new`` sessions are created with (``chat`` passes its
            own; empty means the daemon's ``config.yaml``).
        history: stored messages to show first (None: all of them; 0: none).
        yolo: the session's yolo toggle is on (``--yolo``); the toolbar marks it.
        created: the session was created for this client (``chat``): left without a message, it is deleted.
    """

    def __init__(
        self, client: ControlClient, session_id: str, *, as_json: bool = False,
        provider: NewSessionFlags | None = None, history: int | None = DEFAULT_HISTORY, yolo: bool = False,
        created: bool = False,
    ) -> None:
        self.client = client
        # ``created`` and not ``used``: this client's own session, where nobody has said anything yet (on
        # leaving, it is deleted).
        self.created = created
        self.used = False
        self.yolo = yolo
        self.provider: NewSessionFlags = provider or {}
        self.session_id = session_id
        self.as_json = as_json
        self.history = history
        self.interactive = sys.stdin.isatty() and sys.stdout.isatty() and not as_json
        self.prompt = PromptInput(self, home_from_env()) if self.interactive else None
        self.view = EventView(
            Console(highlight=False, force_terminal=None if self.interactive else False), session_id,
            live=self.interactive, on_live=self.prompt.redraw if self.prompt else None,
        )
        self.done = threading.Event()
        self.sent_messages = 0
        self.input_closed = False
        # Invariant: the turn count we wait for before leaving once a pipe's input has ended: turns of
        # our own messages only (a turn already running when we attached is someone else's).
        self._finished_turns = 0
        # Messages sent whose turn has not started yet, and the ids of the turns they started.
        self._unstarted: list[str] = []
        self._own_turns: set[int] = set()
        self._answered = 0
        # Set except while a /new waits for its session.
        self._switched = threading.Event()
        self._switched.set()
        # Set once the events replayed on attach (a pending approval) are shown: a pipe reads stdin after.
        self._replayed = threading.Event()
        self._replay_barrier = ""
        # Set by SIGINT, acted on by the main loop (a KeyboardInterrupt could land between a
        # read and its buffering, or in the middle of printing an event, and lose either).
        self._interrupt_requested = threading.Event()
        # Requests whose reply is shown (an acknowledgement): request id -> the command.
        self._acks: dict[str, str] = {}
        # /show requests in flight: request id -> the tool's number.
        self._shows: dict[str, int] = {}
        # /rollback requests waiting for their reply, and the verb each asked.
        self._rollbacks: dict[str, str] = {}
        self._reattach_id = ""
        self._stopped_probe = ""
        # /reload-mcp: set while its confirmation is asked (the next line answers it); reloads in flight.
        self._confirming_reload = False
        self._mcp_reloads: set[str] = set()
        self._drop_reason = ""
        # Why the client ends and its exit status (the first reason wins).
        self._ending: tuple[str, int] | None = None
        self._ending_lock = threading.Lock()

    # -- leaving ------------------------------------------------------------------------------------

    def leave(self, why: str, status: int) -> None:
        """End the client: ``why`` is printed once the terminal is restored; ``status`` is the exit status."""
        with self._ending_lock:
            if self._ending is None:
                self._ending = (why, status)
        self.done.set()

    def detach(self, why: str = "detached") -> None:
        """Leave; the session keeps running."""
        self._send(c.Detach(self.client.next_id(), self.session_id))
        if self.created and not self.used:
            self.leave(f"{why}; nothing was said, so the session is not kept", 0)  # deleted by _forget_if_unused
            return
        since = f", or with --since {self.view.last_seq} to replay what happens meanwhile" if self.view.last_seq else ""
        self.leave(f"{why}; the session goes on (re-attach: hermes-actors attach {self.session_id}{since})", 0)

    # -- sending (input thread) ---------------------------------------------------------------------

    def _send(self, message: Any) -> None:
        try:
            self.client.send(message)
        except DaemonNotRunning:
            self.leave("the daemon is gone (the connection closed)", EXIT_FAILURE)

    def interrupt(self) -> None:
        """Interrupt the running turn (Ctrl-C, /stop)."""
        request_id = self.client.next_id()
        self._acks[request_id] = "/stop"
        self._send(c.InterruptSession(request_id, self.session_id))

    def command(self, line: str) -> None:
        """Act on one input line: a slash command, an answer, or a message.

        A line holding bytes that are not UTF-8 (the prompt and :meth:`pipe_input` pass them on as lone
        surrogates) has each replaced with U+FFFD, with a warning, as an argument's are.
        """
        text = replace_undecodable(line).strip()
        if text != line.strip():
            warn_replaced("the input line")
        if self._confirming_reload:
            self._confirming_reload = False
            if text.lower() in ("y", "yes"):
                self._reload_mcp()
            else:
                self.view.line("MCP servers not reloaded", style="dim")
            return
        if not text:
            return
        if not text.startswith("/"):
            if self.view.pending:
                self._answer(text)
            else:
                self.sent_messages += 1
                self.used = True
                self._unstarted.append(text)
                busy = None if self.interactive else "queue"  # piped lines are a script: none may cut another short
                self._send(c.SendMessage(self.client.next_id(), self.session_id, text, busy_mode=busy))
            return
        if self.interactive:
            self.view.line(text, style="dim")
        try:
            word, rest = parse_command(text)
        except SlashCommandError as exc:
            self.view.line(f"error: {exc}", style="red")
            return
        self._slash(word, rest)

    def _slash(self, word: str, rest: str) -> None:
        rid = self.client.next_id()
        if word in _ACK_FALLBACK:
            self._acks[rid] = word
        if word == "/detach":
            self.detach()
        elif word == "/help":
            self.view.line(_help_text(self.view.console.width), style="dim")
        elif word == "/stop":
            self.interrupt()
        elif word == "/steer":
            self._send(c.SteerSession(rid, self.session_id, rest))
        elif word == "/compress":
            self._send(c.CompressSession(rid, self.session_id, rest or None))
        elif word == "/reset-tools":
            self._send(c.ResetSessionTools(rid, self.session_id))
        elif word == "/reload-mcp":
            if rest == "now":
                self._reload_mcp()
            else:
                # As in Hermes: reloading rebuilds the tool list, which the provider's prompt cache keys on.
                self._confirming_reload = True
                self.view.line(
                    "Reload the MCP servers from config.yaml? Each restarts, and this session's tool list is "
                    "rebuilt, so its prompt cache starts over. [y/N]",
                    style="yellow",
                )
        elif word == "/yolo":
            # Every attached client sees the change (a StatusUpdate of kind "yolo"), this one too.
            self._send(c.SetSessionYolo(rid, self.session_id, rest == "on" if rest in ("on", "off") else not self.yolo))
        elif word == "/usage":
            self.view.line(self.view.usage_text())
        elif word == "/show":
            try:
                self.view.tool_call_id(int(rest))
            except IndexError as exc:
                self.view.line(f"error: {exc}", style="red")
                return
            # The whole output is in the store; the reply is read (and shown) by the main thread.
            self._shows[rid] = int(rest)
            self._send(c.ShowSession(rid, self.session_id, 0, _SHOW_SEARCH_MESSAGES))
        elif word == "/rollback":
            verb, number = ("diff", rest.split()[-1]) if rest.startswith("diff") else ("restore", rest) if rest else ("list", "1")
            self._rollbacks[rid] = verb
            self._send(c.CheckpointRequest(rid, verb, self.session_id, int(number)))
        elif word == "/new":
            # Hold further input until the switch is done, so the next line goes to the new session.
            self._switched.clear()
            self._send(c.CreateSession(rid, cwd=os.getcwd(), **self.provider))
            self._switched.wait(SWITCH_TIMEOUT_SECONDS)

    def _reload_mcp(self) -> None:
        rid = self.client.next_id()
        self._mcp_reloads.add(rid)
        self.view.line("reloading MCP servers ...", style="dim")
        self._send(c.ReloadMcp(rid))

    def _reloaded_mcp(self, message: dict[str, Any]) -> None:
        """The reload's outcome, server by server; then this session's tools are rebuilt."""
        for warning in message.get("warnings") or []:
            self.view.line(f"  warning: {warning}", style="yellow")
        servers = message.get("servers") or []
        for server in servers:
            state = server["state"]
            detail = f"{server['tools']} tools" if state == "ready" else (server.get("error") or "")
            self.view.line(f"  {server['name']}: {state}{' - ' + detail if detail else ''}",
                           style="red" if state == "failed" else "dim")
        if not servers:
            self.view.line("  no MCP servers are configured", style="dim")
        rid = self.client.next_id()
        self._acks[rid] = "/reset-tools"
        self._send(c.ResetSessionTools(rid, self.session_id))

    def _answer(self, text: str) -> None:
        pending_id, request = next(iter(self.view.pending.items()))
        choices = request.get("choices") or []
        if text.isdigit() and 1 <= int(text) <= len(choices):
            text = choices[int(text) - 1]
        elif choices and text.strip() == str(len(choices) + 1):
            # "Other": the answer is the next line the user types.
            self.view.line("  type your answer:", style="cyan")
            return
        self._answered += 1
        self._send(c.AnswerSessionRequest(self.client.next_id(), self.session_id, pending_id, text))

    def pipe_input(self) -> None:
        """Read stdin lines (a pipe or file) as input, after the attach replay has been shown (the input
        thread's body); a failure here ends the client, which would otherwise wait for input forever."""
        try:
            self._pipe_input()
        except Exception as exc:  # noqa: BLE001 - whatever broke, the main thread must end and say so
            self.leave(f"the client failed reading its input: {exc}", EXIT_FAILURE)

    def _pipe_input(self) -> None:
        self._replayed.wait(REPLAY_TIMEOUT_SECONDS)
        # Bytes, decoded here: sys.stdin's own decoding may be strict (the locale's) and raise on a bad byte.
        for raw in _descriptor_lines(sys.stdin.fileno()):
            if self.done.is_set():
                return
            self.command(raw.decode("utf-8", "surrogateescape"))
        self.input_closed = True

    def _pipe_finished(self) -> bool:
        """A pipe's input has ended and everything it started (turns, answers) is done.

        Empty input (``< /dev/null``) starts nothing: the client stays attached, watching.
        """
        return (
            self.input_closed and self._answered + self.sent_messages > 0
            and not self.view.turn_running and not self.view.pending
            and self._finished_turns >= self.sent_messages
        )

    # -- receiving (main thread) --------------------------------------------------------------------------

    def run(self, since: int | None) -> int:
        """Attach, serve input and events until the client ends; the exit status."""
        modes = TerminalModes.save()
        previous_term = signal.signal(signal.SIGTERM, lambda *_: self.leave("terminated (SIGTERM)", EXIT_FAILURE))
        previous_int = signal.signal(signal.SIGINT, lambda *_: self._interrupt_requested.set())
        try:
            self._attach(since)
            self._serve()
            self._forget_if_unused()
        except DaemonNotRunning:
            self.leave("the daemon stopped (the connection closed)", EXIT_FAILURE)
        except RequestFailed as exc:
            self.leave(f"error: {exc}", EXIT_NOT_FOUND if exc.code in ("not_found", "invalid") else EXIT_FAILURE)
        except (PlatformError, OSError, ValueError, KeyError, TypeError) as exc:
            self.leave(f"the client failed: {exc}", EXIT_FAILURE)
        finally:
            self.done.set()
            if self.prompt is not None:
                self.prompt.stop()
            modes.restore()
            signal.signal(signal.SIGTERM, previous_term)
            signal.signal(signal.SIGINT, previous_int)
        why, status = self._ending or ("", 0)
        if why:
            # stdout stays JSON lines with --json; a failure's reason goes where errors go.
            print(f"[{why}]", file=sys.stderr if status or self.as_json else sys.stdout, flush=True)
        return status

    def _attach(self, since: int | None) -> None:
        if self.history != 0 and since is None:
            self._show_history()
        self.client.request_raw(c.Attach(self.client.next_id(), self.session_id, since))
        # A reply after the attach is read after the events replayed with it (a pending approval).
        self._replay_barrier = self.client.next_id()
        self.client.send(c.ShowSession(self._replay_barrier, self.session_id, 0, 0))
        if not self.as_json:
            self.view.line(f"attached to {self.session_id} · /help for commands", style="dim")
        reader = self.prompt.run if self.prompt is not None else self.pipe_input
        threading.Thread(target=reader, name="hermes-actors-input", daemon=True).start()
        if self.interactive:
            # The markdown renderer loads while the person types, not before the prompt shows.
            threading.Thread(target=importlib.import_module, args=("rich.markdown",), daemon=True).start()

    def _forget_if_unused(self) -> None:
        """Leaving a session created for this client in which nothing was said: it is deleted, as an
        empty conversation is worth nothing stored (and would only clutter ``sessions list``)."""
        if not self.created or self.used or self._ending is None or self._ending[1] != 0:
            return
        self.client.settimeout(_FORGET_TIMEOUT_SECONDS)
        try:
            self.client.request_raw(c.DeleteSession(self.client.next_id(), self.session_id))
        except (RequestFailed, TimeoutError) as exc:
            self._ending = (f"detached; the empty session {self.session_id} could not be deleted: {exc}", 0)

    def _show_history(self) -> None:
        """The stored conversation before the live events: its last ``history`` messages, or all of them."""
        if self.history is None:
            # Every message, however many: the export streams the whole session (a ShowSession excerpt
            # stops at the store's limit).
            rid = self.client.next_id()
            self.client.send(c.ExportSession(rid, self.session_id))
            chunks: list[str] = []
            while True:
                chunk = self.client.reply_to(rid)
                chunks.append(chunk.data)
                if chunk.last:
                    break
            lines = [json.loads(line) for line in "".join(chunks).splitlines()]
            reply: dict[str, Any] = {"tail": [line for line in lines if line.get("type") == "message"]}
        else:
            reply = self.client.request_raw(c.ShowSession(self.client.next_id(), self.session_id, 0, self.history))
        if not self.as_json:
            self.view.show_history(reply)
            return
        for stored in [*(reply.get("head") or []), *(reply.get("tail") or [])]:
            sys.stdout.write(json.dumps({**stored, "type": "StoredMessage"}, ensure_ascii=False) + "\n")
        sys.stdout.flush()

    def _serve(self) -> None:
        # The read deadline bounds how long a Ctrl-C or a finished pipe waits to be acted on.
        self.client.settimeout(0.2)
        while not self.done.is_set():
            if self._interrupt_requested.is_set():
                self._interrupt_requested.clear()
                if self.prompt is None and not self.view.turn_running:
                    # Without a prompt Ctrl-C is the only way out: with no turn to interrupt, it leaves.
                    self.leave("left (Ctrl-C)", EXIT_INTERRUPTED)
                    return
                self.interrupt()
            if self.prompt is None and self._pipe_finished():
                self.leave("", 0)  # the end of a script needs no comment
                return
            try:
                self._dispatch(self.client.receive_raw())
            except TimeoutError:
                continue

    def _dispatch(self, message: dict[str, Any]) -> None:
        kind = message.get("type")
        if "seq" in message:
            self._event(kind, message)
        elif message.get("request_id") == self._replay_barrier:
            self._replayed.set()
        elif message.get("request_id") == self._stopped_probe:
            self.leave(
                f"the session ended: {self._drop_reason} (it stays stored: hermes-actors attach {self.session_id})",
                EXIT_FAILURE,
            )
        elif kind == "McpReply" and message.get("request_id") in self._mcp_reloads:
            self._mcp_reloads.discard(message["request_id"])
            self._reloaded_mcp(message)
        elif kind == "CheckpointReply" and message.get("request_id") in self._rollbacks:
            verb = self._rollbacks.pop(message["request_id"])
            self.view.line(format_checkpoints(message, verb, "/rollback"))
        elif message.get("request_id") in self._shows:
            self.view.show_tool(self._shows.pop(message["request_id"]), message.get("tail") or [])
        elif kind == "ErrorReply":
            self._error(message)
        elif kind == "Ok" and message.get("request_id") in self._acks:
            command = self._acks.pop(message["request_id"])
            self.view.line(message.get("message") or _ACK_FALLBACK[command], style="dim")
        elif kind == "SessionCreated":
            self._switch(message["session_id"])

    def _event(self, kind: str | None, message: dict[str, Any]) -> None:
        own_path = self.view.session_path
        if message.get("session_id") != self.session_id and not str(message.get("path", "")).startswith(own_path + "/"):
            return  # a session we left with /new
        if self.as_json:
            sys.stdout.write(json.dumps(message, ensure_ascii=False) + "\n")
            sys.stdout.flush()
            self.view.last_seq = max(self.view.last_seq, message["seq"])
            if kind in ("TurnStarted", "TurnFinished") and self.view.is_own(message):
                self.view.turn_running = kind == "TurnStarted"
        else:
            self.view.show(message)
        if kind == "StatusUpdate" and message.get("kind") == "yolo" and self.view.is_own(message):
            self.yolo = str(message.get("text")).startswith("YOLO on")
        if kind == "SubscriberDropped" and self.view.is_own(message) and not self.done.is_set():
            self._dropped(str(message.get("reason", "")))
        if kind == "TurnStarted" and self.view.is_own(message):
            self.used = True  # by us, or by another client attached to it
        if kind == "TurnStarted" and self.view.is_own(message) and message.get("text") in self._unstarted:
            self._unstarted.remove(message["text"])
            self._own_turns.add(message["turn_id"])
        if kind == "TurnFinished" and self.view.is_own(message) and message.get("turn_id") in self._own_turns:
            self._finished_turns += 1

    def _dropped(self, reason: str) -> None:
        self._drop_reason = reason
        if reason.startswith(_SLOW_DROP):
            # Resume where we were: the session's replay buffer still has what we missed.
            self._reattach_id = self.client.next_id()
            self._send(c.Attach(self._reattach_id, self.session_id, self.view.last_seq))
            return
        # The session stopped (killed, deleted, or the daemon is stopping). Re-attaching would wake it from
        # the store; a request the daemon still answers tells a stopped session from a daemon going away.
        self._stopped_probe = self.client.next_id()
        self._send(c.Status(self._stopped_probe))

    def _error(self, message: dict[str, Any]) -> None:
        request_id = message.get("request_id")
        if request_id and request_id == self._reattach_id:
            self.leave(f"the session ended: {self._drop_reason or message.get('message')}", EXIT_FAILURE)
            return
        command = self._acks.pop(request_id, "") if request_id else ""
        self.view.line(f"error: {command + ': ' if command else ''}{message.get('message')}", style="red")
        self._switched.set()  # a failed /new must not hold the input forever

    def _switch(self, session_id: str) -> None:
        self._send(c.Detach(self.client.next_id(), self.session_id))
        if self.created and not self.used:
            self._send(c.DeleteSession(self.client.next_id(), self.session_id))  # its Ok is not waited for
        self.created, self.used = True, False
        self.session_id = session_id
        self.view.start_over(session_id)
        # A new session starts with yolo off (the daemon's default): the toolbar must not say otherwise.
        self.yolo = False
        # A pipe's exit waits for the turns of the session it is attached to now.
        self.sent_messages = self._finished_turns = 0
        self._unstarted.clear()
        self._own_turns.clear()
        self._send(c.Attach(self.client.next_id(), self.session_id, None))
        self.view.line(f"new session {self.session_id}", style="dim")
        self._switched.set()


def _help_text(width: int) -> str:
    """``/help`` at ``width`` columns: a command's text wraps under itself, not under the command."""
    column = max(len(name) for name in COMMANDS) + 3
    lines = ["commands:"]
    for name, text in COMMANDS.items():
        lines += textwrap.wrap(text, width - 1, initial_indent=f"  {name:<{column - 2}}", subsequent_indent=" " * column)
    for text in (
        "anything else is a message (or the answer to a pending approval or question)",
        "Ctrl-C interrupts the turn (twice at an idle prompt: leave) · Ctrl-D detaches · Ctrl-R searches the input history",
    ):
        lines += textwrap.wrap(text, width - 1, subsequent_indent="  ")
    return "\n".join(lines)


def _descriptor_lines(fd: int) -> Iterator[bytes]:
    """The lines read from ``fd``, each with its newline (the last one perhaps without).

    Read from the descriptor, not through ``sys.stdin.buffer``: this runs in a daemon thread that is still
    blocked reading when the client exits, and a thread blocked in a buffered reader holds the reader's lock,
    which the interpreter's exit then cannot take (it aborts the process, SIGABRT, as seen under load).
    """
    pending = b""
    while chunk := os.read(fd, _READ_SIZE):
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            yield line + b"\n"
    if pending:
        yield pending
