"""How an attached client shows a session's events (wire dicts, as received).

With a terminal: ``rich`` rendering, answer text streamed, reasoning dimmed,
one numbered line per finished tool (emoji, name, argument preview, duration,
ok or error) with the first lines of its output, approvals and questions shown
inline. Without one (a pipe): the same content as plain text, no control
codes. ``--json`` bypasses this module.

In ``live`` mode (the interactive client, whose prompt redraws itself) nothing
partial is written: answers are committed as rendered markdown blocks and
reasoning as whole lines, and :meth:`EventView.live_text` is what is still
open, for the prompt to show (see :mod:`cli.live_text`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from rich.cells import cell_len
from rich.console import Console

from cli.live_text import LineBuffer, MarkdownBlocks
from cli.tool_arguments import arguments_text
from cli.tool_output import read_result
from cli.turn_figures import footer_text, usage_text
from messages.paths import session_path

__all__ = ["EventView"]

_PREVIEW = 60
#: Lines of a tool's output shown under its line (``/show N`` shows all of it).
_OUTPUT_LINES = 3
#: A tool's arguments get at least this many characters, however narrow the terminal.
_MIN_ARGUMENTS = 20
#: A running tool's arguments in the toolbar.
_TOOLBAR_ARGUMENTS = 40


class EventView:
    """Renders events and remembers what the input side needs (pending requests, usage, last seq).

    Events a session relays from its subagents carry the subagent's path; they
    are shown labelled and without their streamed text, and they never count
    as the session's own turn.

    Args:
        console: where to render; ``Console(force_terminal=False)`` for a pipe.
        session_id: the attached session (its own events have its path).
        live: commit only finished blocks and lines; ``on_live`` is called whenever
            :meth:`live_text` changes (the prompt redraws then).
        show_hint: under a tool whose output was cut, say that ``/show N`` has all of it (off where
            there is no ``/show``: ``chat -q``).
    """

    def __init__(
        self, console: Console, session_id: str, *, live: bool = False, on_live: Callable[[], None] | None = None,
        show_hint: bool = True,
    ) -> None:
        self.console = console
        self.show_hint = show_hint
        self.plain = not console.is_terminal
        # Invariant: True while the cursor sits after streamed text with no newline yet.
        self._mid_line = False
        self._in_reasoning = False
        self.live = live and not self.plain
        self._on_live = on_live or (lambda: None)
        self._answer = MarkdownBlocks()
        self._reasoning = LineBuffer()
        self.start_over(session_id)

    def start_over(self, session_id: str) -> None:
        """Forget everything about the session shown so far and follow ``session_id`` (``/new``).

        Its numbers (usage, the last seq, the tools for ``/show N``) are its own: carried over,
        they made the next footer a difference between two sessions' totals.
        """
        self.end_line()
        self.session_path = session_path(session_id)
        self.last_seq = 0
        self.pending: dict[str, dict[str, Any]] = {}
        self.usage: dict[str, Any] | None = None
        self.activity = ""
        self.turn_running = False
        # Keyed by (actor path, call id); a finished event without a path finds nothing.
        self._tools: dict[tuple[str | None, str], dict[str, Any]] = {}
        #: Every finished tool seen, numbered from 1 for ``/show N``: (title, call id, result preview).
        self.tool_calls: list[tuple[str, str, str]] = []
        self._tool_started_at: dict[tuple[str | None, str], float] = {}

    @property
    def streaming(self) -> bool:
        """True while streamed text is mid-line (nothing else may be drawn there)."""
        return self._mid_line

    # -- output helpers --------------------------------------------------------------------

    def live_text(self) -> str:
        """What is streamed but not committed yet (live mode): the open reasoning line or answer block."""
        return self._reasoning.open or self._answer.open_text()

    def _commit_answer(self, block: str | None) -> None:
        if block is not None:
            self._markdown(block)

    def _markdown(self, text: str) -> None:
        # Imported when first needed: it is a fifth of the client's start-up time.
        from rich.markdown import Markdown

        self.console.print(Markdown(text))

    def _print(self, text: str, *, style: str | None, end: str = "\n") -> None:
        """``text`` exactly as it is: no markup, no highlighting, and no emoji codes (``root:x:0:0`` is
        a passwd line, not ``root❌0:0``)."""
        self.console.print(text, end=end, style=style, markup=False, emoji=False, highlight=False)

    def _stream(self, text: str, style: str | None = None) -> None:
        if self.live:
            if style is None:
                for block in self._answer.feed(text):
                    self._commit_answer(block)
            else:
                for done in self._reasoning.feed(text):
                    self._print(done, style=style)
            self._on_live()
            return
        if self.plain:
            self.console.file.write(text)
            self.console.file.flush()
        else:
            self._print(text, end="", style=style)
        self._mid_line = not text.endswith("\n")

    def line(self, text: str, style: str | None = None) -> None:
        """A whole line, after ending any streamed text."""
        self.end_line()
        if self.plain:
            self.console.file.write(text + "\n")
            self.console.file.flush()
        else:
            self._print(text, style=style)

    def end_line(self) -> None:
        """End what is streaming: the open line (or, live, the open block and reasoning line) is committed."""
        if self.live:
            rest = self._reasoning.finish()
            if rest is not None:
                self._print(rest, style="dim italic")
            self._commit_answer(self._answer.finish())
            self._on_live()
        elif self._mid_line:
            self._stream("\n")
        self._in_reasoning = False

    # -- events ----------------------------------------------------------------------------------

    def is_own(self, event: dict[str, Any]) -> bool:
        """True for the session's own events, False for those relayed from a subagent."""
        return event.get("path", self.session_path) in ("", self.session_path)

    def show(self, event: dict[str, Any]) -> None:
        """Render one event dict and update the remembered state."""
        seq = event.get("seq")
        if isinstance(seq, int) and seq > self.last_seq:
            self.last_seq = seq
        kind = event.get("type", "")
        if not self.is_own(event):
            self._relayed(kind, event)
            return
        handler = getattr(self, f"_on_{kind}", None)
        if handler is not None:
            handler(event)

    def _relayed(self, kind: str, event: dict[str, Any]) -> None:
        label = str(event.get("path", "")).rsplit("/", 1)[-1]
        if kind == "TurnStarted":
            self.line(f"  ↳ {label} started: {event.get('text', '')}", style="magenta")
        elif kind == "TurnFinished":
            self.line(f"  ↳ {label} {event['reason']}", style="magenta")
        elif kind == "ToolStarted":
            self._tools[(event["path"], event["call_id"])] = event
        elif kind == "ToolFinished":
            self._tool_line(event, prefix=f"  [{label}]")
        elif kind in ("ApprovalRequested", "ClarifyRequested", "RequestResolved", "StatusUpdate"):
            getattr(self, f"_on_{kind}")(event)

    def _on_TurnStarted(self, event: dict[str, Any]) -> None:  # noqa: N802 - named after the event
        self.turn_running = True
        self.activity = "thinking"
        if event.get("text"):
            self.line(f"> {event['text']}", style="bold")

    def _on_TextDelta(self, event: dict[str, Any]) -> None:  # noqa: N802
        if self._in_reasoning:
            self.end_line()
        self.activity = "writing"
        self._stream(event["text"])

    def _on_ReasoningDelta(self, event: dict[str, Any]) -> None:  # noqa: N802
        if not self._in_reasoning:
            self.end_line()
        self._in_reasoning = True
        self.activity = "reasoning"
        self._stream(event["text"], style="dim italic")

    def _on_ToolStarted(self, event: dict[str, Any]) -> None:  # noqa: N802
        self._tools[(event["path"], event["call_id"])] = event
        self._tool_started_at[(event["path"], event["call_id"])] = time.monotonic()
        self.activity = f"running {event['name']}"

    def _on_ToolProgress(self, event: dict[str, Any]) -> None:  # noqa: N802
        self.activity = event["text"]

    def _on_ToolFinished(self, event: dict[str, Any]) -> None:  # noqa: N802
        parent = self._tools.get((event["path"], event.get("parent_call_id") or ""))
        if parent is not None:
            # A call made by a script (execute_code) still running: labelled with it, like a subagent's.
            self._tool_line(event, prefix=f"  [{parent['name']}]")
            return
        self._tool_line(event, prefix=" ")
        self.activity = "thinking"

    def _tool_line(self, event: dict[str, Any], prefix: str) -> None:
        started = self._tools.pop((event.get("path"), event["call_id"]), {})
        self._tool_started_at.pop((event.get("path"), event["call_id"]), None)
        emoji = started.get("emoji") or "🔧"
        result = read_result(str(event.get("result_preview", "")))
        # A command that ran but ended badly is a failure to the person reading, as in Hermes's own display.
        ok = event["ok"] and not result.failed
        code = f" {result.ending()}" if result.exit_code is not None else ""
        number = len(self.tool_calls) + 1
        tail = f"  {event['duration_seconds']:.1f}s {('ok' if ok else 'error') if self.plain else ('✓' if ok else '✗')}{code}"
        head = f"{prefix}[{number}] {emoji} {event['name']} "
        # The arguments get what the row has left (counted in cells: an emoji takes two), so it does not wrap.
        room = max(self.console.width - cell_len(head) - cell_len(tail) - 1, _MIN_ARGUMENTS)
        title = f"{emoji} {event['name']} {arguments_text(event['name'], str(started.get('args_preview', '')), room)}"
        self.tool_calls.append((title, event["call_id"], str(event.get("result_preview", ""))))
        self.line(f"{prefix}[{number}] {title}{tail}", style="green" if ok else "red")
        indent = f"{prefix}    "
        width = max(self.console.width - len(indent), _MIN_ARGUMENTS)
        for text in result.lines[:_OUTPUT_LINES]:
            self.line(indent + (text if len(text) <= width else text[: width - 1] + "…"), style="dim")
        cut = result.cut or len(result.lines) > _OUTPUT_LINES or any(len(text) > width for text in result.lines[:_OUTPUT_LINES])
        if cut and self.show_hint:
            self.line(f"{indent}… /show {number} for the whole output", style="dim")

    def running_tools(self) -> list[tuple[str, float]]:
        """The session's tools running now: what each runs (its name and arguments) and seconds since it started."""
        now = time.monotonic()
        running = []
        for key, started in self._tool_started_at.items():
            if key in self._tools:
                tool = self._tools[key]
                what = arguments_text(tool["name"], str(tool.get("args_preview", "")), _TOOLBAR_ARGUMENTS)
                running.append((f"{tool['name']} {what}".rstrip(), now - started))
        return running

    def tool_call_id(self, number: int) -> str:
        """The call id of tool ``[number]`` (for ``/show N``).

        Raises:
            IndexError: no tool has that number.
        """
        if not 1 <= number <= len(self.tool_calls):
            raise IndexError(f"no tool [{number}]; tools so far: 1-{len(self.tool_calls)}" if self.tool_calls else "no tool has run yet")
        return self.tool_calls[number - 1][1]

    def show_tool(self, number: int, stored: list[dict[str, Any]]) -> None:
        """Tool ``[number]``'s whole output, found among ``stored`` messages (its preview when not stored yet)."""
        title, call_id, preview = self.tool_calls[number - 1]
        message = next((m.get("message", m) for m in stored if m.get("message", m).get("tool_call_id") == call_id), None)
        result = read_result(_content_text(message.get("content")) if message is not None else preview)
        ending = f" ({result.ending()})" if result.exit_code is not None else ""
        self.line(f"[{number}] {title}{ending}", style="bold")
        for text in result.lines or ["(no output)"]:
            self.line(f"    {text}")

    def _on_StatusUpdate(self, event: dict[str, Any]) -> None:  # noqa: N802
        if event["kind"] == "learning":
            # The background review's news: good news, and its text already says what it is (💾, 📝).
            self.line(event["text"], style="green")
            return
        self.line(f"[{event['kind']}] {event['text']}", style="yellow")

    def _on_ApprovalRequested(self, event: dict[str, Any]) -> None:  # noqa: N802
        self.pending[event["request_id"]] = event
        self.turn_running = True  # a request is only ever pending inside a turn (maybe one begun before we attached)
        choices = "/".join(event.get("choices") or ["once", "session", "deny"])
        self.line(f"⚠ approval needed ({event['request_id']}): {event['command']}", style="bold yellow")
        self.line(f"  {event['description']} — answer {choices}", style="yellow")

    def _on_ClarifyRequested(self, event: dict[str, Any]) -> None:  # noqa: N802
        self.pending[event["request_id"]] = event
        self.turn_running = True
        self.line(f"? {event['question']} ({event['request_id']})", style="bold cyan")
        choices = event.get("choices") or []
        for number, choice in enumerate(choices, 1):
            self.line(f"  {number}. {choice}", style="cyan")
        if choices and event.get("allow_freetext", True):
            self.line(f"  {len(choices) + 1}. Other (type your answer)", style="cyan")

    def _on_RequestResolved(self, event: dict[str, Any]) -> None:  # noqa: N802
        if self.pending.pop(event["request_id"], None) is not None:
            self.line(f"  → {event['request_id']}: {event['answer']} (by {event['resolved_by']})", style="dim")

    def _on_TurnFinished(self, event: dict[str, Any]) -> None:  # noqa: N802
        self.turn_running = False
        self.activity = ""
        self.end_line()
        if event["reason"] != "completed":
            detail = f": {event['error']}" if event.get("error") else ""
            self.line(f"[turn {event['reason']}{detail}]", style="red")
        if self.live:
            self.line(footer_text(event), style="dim")

    def _on_UsageUpdated(self, event: dict[str, Any]) -> None:  # noqa: N802
        self.usage = event

    def _on_FellBehind(self, event: dict[str, Any]) -> None:  # noqa: N802
        self.line(
            f"[events before {event['oldest_available']} are no longer kept; showing from there]", style="yellow"
        )

    def _on_SubscriberDropped(self, event: dict[str, Any]) -> None:  # noqa: N802
        self.line(f"[detached by the session: {event['reason']}]", style="yellow")

    def usage_text(self) -> str:
        """The session's usage so far, for ``/usage``."""
        return usage_text(self.usage)

    def show_history(self, reply: dict[str, Any]) -> None:
        """A stored conversation's messages (a wire ``SessionShowReply``), before live events."""
        head, tail, omitted = reply.get("head") or [], reply.get("tail") or [], int(reply.get("omitted") or 0)
        if not head and not tail:
            return
        self.line("── conversation so far ──", style="dim")
        for message in head:
            self._history_message(message)
        if omitted:
            self.line(f"… {omitted} earlier messages not shown (attach --all shows every one)", style="dim")
        for message in tail:
            self._history_message(message)
        self.line("── live ──", style="dim")

    def _history_message(self, stored: dict[str, Any]) -> None:
        message = stored.get("message", stored)
        role = message.get("role", "")
        text = _content_text(message.get("content"))
        if role == "user":
            self.line(f"> {text}", style="bold")
        elif role == "assistant":
            for call in message.get("tool_calls") or []:
                function = call.get("function") or call
                name = str(function.get("name", "tool"))
                self.line(f"  🔧 {name} {arguments_text(name, str(function.get('arguments', '')), _PREVIEW)}", style="dim")
            if text.strip():
                if self.plain:
                    self.line(text)
                else:
                    self.end_line()
                    self._markdown(text)
        elif role == "tool":
            first = text.strip().splitlines()[:1]
            self.line(f"    {first[0][:200] if first else '(no output)'}", style="dim")


def _content_text(content: Any) -> str:
    """A stored message's content as text (a string, or a list of parts with text)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""
