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

@attrs.frozen(kw_only=True)
class _Stamped:
    """What every event carries, stamped by the hub that publishes it."""

    session_id: str = ""
    seq: int = 0
    path: str = ""


@attrs.frozen(kw_only=True)
class TurnStarted(_Stamped):
    """A turn began for a user message (or a background notification)."""

    turn_id: int
    text: str


@attrs.frozen(kw_only=True)
class TextDelta(_Stamped):
    """Streamed answer text."""

    text: str


@attrs.frozen(kw_only=True)
class ReasoningDelta(_Stamped):
    """Streamed reasoning text (shown dimmed)."""

    text: str


@attrs.frozen(kw_only=True)
class ToolStarted(_Stamped):
    """A tool worker started a call; ``parent_call_id`` names the call it runs inside (a call
    made by execute_code's script), blank for the model's own calls."""

    call_id: str
    name: str
    args_preview: str
    emoji: str = ""
    parent_call_id: str = ""


@attrs.frozen(kw_only=True)
class ToolProgress(_Stamped):
    """A running tool reported progress ("execute_code: 3 tool calls, 12 s")."""

    call_id: str
    text: str


@attrs.frozen(kw_only=True)
class ToolFinished(_Stamped):
    """A tool call ended (``parent_call_id``: as in :class:`ToolStarted`)."""

    call_id: str
    name: str
    duration_seconds: float
    ok: bool
    result_preview: str
    parent_call_id: str = ""


@attrs.frozen(kw_only=True)
class StatusUpdate(_Stamped):
    """Something the user should see that is not the answer: ``kind`` is one of
    retrying, rotating_key, fallback, compressing, budget, stale, warning, info, yolo (the session's
    --yolo toggle changed: the text starts with ``YOLO on`` or ``YOLO off``), host_lost (the session's
    host process went away: a turn it was running is lost, and the client is attached again), learning (the
    background review changed memory or a skill: the text says what and why)."""

    kind: str
    text: str


@attrs.frozen(kw_only=True)
class ApprovalRequested(_Stamped):
    """A dangerous command waits for approval: once, session, always or deny."""

    request_id: str
    command: str
    description: str
    choices: list[str] = attrs.Factory(lambda: ["once", "session", "always", "deny"])
    deadline_seconds: float = 300.0


@attrs.frozen(kw_only=True)
class ClarifyRequested(_Stamped):
    """The model asks the user a question."""

    request_id: str
    question: str
    choices: list[str] = attrs.Factory(list)
    allow_freetext: bool = True
    deadline_seconds: float = 300.0


@attrs.frozen(kw_only=True)
class RequestResolved(_Stamped):
    """An approval or clarify request was answered (first answer wins) or expired."""

    request_id: str
    answer: str
    resolved_by: str


@attrs.frozen(kw_only=True)
class TurnFinished(_Stamped):
    """A turn ended. ``reason``: completed, interrupted, budget or error.

    The figures are this turn's own (a client that attached mid-turn has not seen it start):
    how long it ran, its tokens and its estimated cost (None: no call of it had a known price).
    """

    turn_id: int
    final_text: str
    reason: str
    error: str | None = None
    duration_seconds: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None


@attrs.frozen(kw_only=True)
class UsageUpdated(_Stamped):
    """Token usage so far in this session, its estimated cost and the context in use.

    ``cost_usd`` is None when the model has no known price (shown as "n/a",
    never 0). ``context_tokens`` is the prompt size of the last call, against
    ``context_window`` (None when unknown).
    """

    prompt_tokens: int
    completion_tokens: int
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    api_calls: int = 0
    cost_usd: float | None = None
    context_tokens: int = 0
    context_window: int | None = None


@attrs.frozen(kw_only=True)
class FellBehind(_Stamped):
    """The requested resume point is older than the replay buffer holds."""

    requested: int
    oldest_available: int


@attrs.frozen(kw_only=True)
class SubscriberDropped(_Stamped):
    """Sent last to a subscriber that could not keep up (or was detached)."""

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
