"""Session events: what a session publishes to its subscribers (CLI clients,
the HTTP API, a parent session relaying a subagent).

Every event carries ``session_id``, the per-session monotonic ``seq`` (a client
resumes with ``attach --since N``) and the ``path`` of the actor it comes from
(``sessions/session:ab12`` or a subagent's path when relayed by its parent).
The session's hub stamps these three on what it publishes; they default to
blank so that a provider's stream can emit :class:`TextDelta` and
:class:`ReasoningDelta` itself (``providers.types.StreamEvent``): one type for
a piece of streamed text, from the wire to the client.
All fields are keyword-only so events read the same wherever they are built.
"""

from __future__ import annotations

import attrs

__all__ = [
    "ApprovalRequested",
    "ClarifyRequested",
    "FellBehind",
    "ReasoningDelta",
    "RequestResolved",
    "SessionEvent",
    "StatusUpdate",
    "SubscriberDropped",
    "TextDelta",
    "ToolFinished",
    "ToolProgress",
    "ToolStarted",
    "TurnFinished",
    "TurnStarted",
    "UsageUpdated",
]

_event = attrs.frozen(kw_only=True)


@_event
class TurnStarted:
    """A turn began for a user message (or a background notification)."""

    session_id: str = ""
    seq: int = 0
    path: str = ""
    turn_id: int
    text: str


@_event
class TextDelta:
    """Streamed answer text."""

    session_id: str = ""
    seq: int = 0
    path: str = ""
    text: str


@_event
class ReasoningDelta:
    """Streamed reasoning text (shown dimmed)."""

    session_id: str = ""
    seq: int = 0
    path: str = ""
    text: str


@_event
class ToolStarted:
    """A tool worker started a call."""

    session_id: str = ""
    seq: int = 0
    path: str = ""
    call_id: str
    name: str
    args_preview: str
    emoji: str = ""


@_event
class ToolProgress:
    """A running tool reported progress ("execute_code: 3 tool calls, 12 s")."""

    session_id: str = ""
    seq: int = 0
    path: str = ""
    call_id: str
    text: str


@_event
class ToolFinished:
    """A tool call ended."""

    session_id: str = ""
    seq: int = 0
    path: str = ""
    call_id: str
    name: str
    duration_seconds: float
    ok: bool
    result_preview: str


@_event
class StatusUpdate:
    """Something the user should see that is not the answer: ``kind`` is one of
    retrying, rotating_key, fallback, compressing, budget, stale, warning, info."""

    session_id: str = ""
    seq: int = 0
    path: str = ""
    kind: str
    text: str


@_event
class ApprovalRequested:
    """A dangerous command waits for approval: once, session or deny."""

    session_id: str = ""
    seq: int = 0
    path: str = ""
    request_id: str
    command: str
    description: str
    choices: list[str] = attrs.Factory(lambda: ["once", "session", "deny"])
    deadline_seconds: float = 300.0


@_event
class ClarifyRequested:
    """The model asks the user a question."""

    session_id: str = ""
    seq: int = 0
    path: str = ""
    request_id: str
    question: str
    choices: list[str] = attrs.Factory(list)
    allow_freetext: bool = True
    deadline_seconds: float = 300.0


@_event
class RequestResolved:
    """An approval or clarify request was answered (first answer wins) or expired."""

    session_id: str = ""
    seq: int = 0
    path: str = ""
    request_id: str
    answer: str
    resolved_by: str


@_event
class TurnFinished:
    """A turn ended. ``reason``: completed, interrupted, budget or error."""

    session_id: str = ""
    seq: int = 0
    path: str = ""
    turn_id: int
    final_text: str
    reason: str
    error: str | None = None


@_event
class UsageUpdated:
    """Token usage so far in this session."""

    session_id: str = ""
    seq: int = 0
    path: str = ""
    prompt_tokens: int
    completion_tokens: int
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    api_calls: int = 0


@_event
class FellBehind:
    """The requested resume point is older than the replay buffer holds."""

    session_id: str = ""
    seq: int = 0
    path: str = ""
    requested: int
    oldest_available: int


@_event
class SubscriberDropped:
    """Sent last to a subscriber that could not keep up (or was detached)."""

    session_id: str = ""
    seq: int = 0
    path: str = ""
    reason: str


SessionEvent = (
    TurnStarted
    | TextDelta
    | ReasoningDelta
    | ToolStarted
    | ToolProgress
    | ToolFinished
    | StatusUpdate
    | ApprovalRequested
    | ClarifyRequested
    | RequestResolved
    | TurnFinished
    | UsageUpdated
    | FellBehind
    | SubscriberDropped
)
