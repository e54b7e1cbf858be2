"""How an attached client shows a session's events (wire dicts, as received).

With a terminal: ``rich`` rendering, answer text streamed, reasoning dimmed,
one line per finished tool (emoji, name, argument preview, duration, ok or
error), approvals and questions shown inline. Without one (a pipe): the same
content as plain text, no control codes. ``--json`` bypasses this module.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape

from messages.paths import session_path

__all__ = ["EventView"]

_PREVIEW = 60


class EventView:
    """Renders events and remembers what the input side needs (pending requests, usage, last seq).

    Events a session relays from its subagents carry the subagent's path; they
    are shown labelled and without their streamed text, and they never count
    as the session's own turn.

    Args:
        console: where to render; ``Console(force_terminal=False)`` for a pipe.
        session_id: the attached session (its own events have its path).
    """

    def __init__(self, console: Console, session_id: str) -> None:
        self.console = console
        self.session_path = session_path(session_id)
        self.plain = not console.is_terminal
        self.last_seq = 0
        self.pending: dict[str, dict[str, Any]] = {}
        self.usage: dict[str, Any] | None = None
        self.activity = ""
        self.turn_running = False
        self._tools: dict[tuple[str, str], dict[str, Any]] = {}
        # Invariant: True while the cursor sits after streamed text with no newline yet.
        self._mid_line = False
        self._in_reasoning = False

    @property
    def streaming(self) -> bool:
        """True while streamed text is mid-line (nothing else may be drawn there)."""
        return self._mid_line

    # -- output helpers --------------------------------------------------------------------

    def _stream(self, text: str, style: str | None = None) -> None:
        if self.plain:
            self.console.file.write(text)
            self.console.file.flush()
        else:
            self.console.print(escape(text), end="", style=style, highlight=False)
        self._mid_line = not text.endswith("\n")

    def line(self, text: str, style: str | None = None) -> None:
        """A whole line, after ending any streamed text."""
        self._end_line()
        if self.plain:
            self.console.file.write(text + "\n")
            self.console.file.flush()
        else:
            self.console.print(escape(text), style=style, highlight=False)

    def _end_line(self) -> None:
        if self._mid_line:
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
            self._end_line()
        self.activity = "writing"
        self._stream(event["text"])

    def _on_ReasoningDelta(self, event: dict[str, Any]) -> None:  # noqa: N802
        self._in_reasoning = True
        self.activity = "reasoning"
        self._stream(event["text"], style="dim italic")

    def _on_ToolStarted(self, event: dict[str, Any]) -> None:  # noqa: N802
        self._tools[(event["path"], event["call_id"])] = event
        self.activity = f"running {event['name']}"

    def _on_ToolProgress(self, event: dict[str, Any]) -> None:  # noqa: N802
        self.activity = event["text"]

    def _on_ToolFinished(self, event: dict[str, Any]) -> None:  # noqa: N802
        self._tool_line(event, prefix=" ")
        self.activity = "thinking"

    def _tool_line(self, event: dict[str, Any], prefix: str) -> None:
        started = self._tools.pop((event.get("path"), event["call_id"]), {})
        emoji = started.get("emoji") or "🔧"
        preview = " ".join(str(started.get("args_preview", "")).split())[:_PREVIEW]
        outcome = "ok" if event["ok"] else "error"
        mark = "✓" if event["ok"] else "✗"
        self.line(
            f"{prefix} {emoji} {event['name']} {preview}  {event['duration_seconds']:.1f}s {outcome if self.plain else mark}",
            style="green" if event["ok"] else "red",
        )

    def _on_StatusUpdate(self, event: dict[str, Any]) -> None:  # noqa: N802
        self.line(f"[{event['kind']}] {event['text']}", style="yellow")

    def _on_ApprovalRequested(self, event: dict[str, Any]) -> None:  # noqa: N802
        self.pending[event["request_id"]] = event
        choices = "/".join(event.get("choices") or ["once", "session", "deny"])
        self.line(f"⚠ approval needed ({event['request_id']}): {event['command']}", style="bold yellow")
        self.line(f"  {event['description']} — answer {choices}", style="yellow")

    def _on_ClarifyRequested(self, event: dict[str, Any]) -> None:  # noqa: N802
        self.pending[event["request_id"]] = event
        self.line(f"? {event['question']} ({event['request_id']})", style="bold cyan")
        for number, choice in enumerate(event.get("choices") or [], 1):
            self.line(f"  {number}. {choice}", style="cyan")

    def _on_RequestResolved(self, event: dict[str, Any]) -> None:  # noqa: N802
        if self.pending.pop(event["request_id"], None) is not None:
            self.line(f"  → {event['request_id']}: {event['answer']} (by {event['resolved_by']})", style="dim")

    def _on_TurnFinished(self, event: dict[str, Any]) -> None:  # noqa: N802
        self.turn_running = False
        self.activity = ""
        self._end_line()
        if event["reason"] != "completed":
            detail = f": {event['error']}" if event.get("error") else ""
            self.line(f"[turn {event['reason']}{detail}]", style="red")

    def _on_UsageUpdated(self, event: dict[str, Any]) -> None:  # noqa: N802
        self.usage = event

    def _on_FellBehind(self, event: dict[str, Any]) -> None:  # noqa: N802
        self.line(
            f"[events before {event['oldest_available']} are no longer kept; showing from there]", style="yellow"
        )

    def _on_SubscriberDropped(self, event: dict[str, Any]) -> None:  # noqa: N802
        self.line(f"[detached by the session: {event['reason']}]", style="yellow")

    def usage_text(self) -> str:
        """The last usage figures, for ``/usage``."""
        if self.usage is None:
            return "no usage reported yet"
        u = self.usage
        return (
            f"prompt {u['prompt_tokens']}  completion {u['completion_tokens']}  "
            f"cache read {u.get('cache_read_tokens', 0)}  cache write {u.get('cache_write_tokens', 0)}  "
            f"reasoning {u.get('reasoning_tokens', 0)}  api calls {u.get('api_calls', 0)}"
        )
