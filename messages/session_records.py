"""Stored sessions as the control conversation shows them: a listing's rows, search hits, a
session's first and last messages, and an export's chunks (the daemon's replies to
``ListSessions``, ``SearchSessions``, ``ShowSession`` and ``ExportSession`` of
:mod:`messages.control`, whose :data:`~messages.control.DaemonMessage` union includes them)."""

from __future__ import annotations

from typing import Any

import attrs

EXPORT_FORMATS: tuple[str, ...] = ("jsonl", "md", "html")
"""The formats of ``ExportSession``: JSON lines, Markdown, a self-contained HTML page."""

__all__ = ["EXPORT_FORMATS", "ExportChunk", "SearchHitSummary", "SearchMatch", "SearchReply", "SessionListReply", "SessionShowReply", "SessionSummary"]


@attrs.frozen
class SessionSummary:
    """A stored session's row as listings show it (times are Unix seconds)."""

    id: str
    title: str | None
    source: str
    model: str | None
    cwd: str | None
    parent_session_id: str | None
    started_at: float
    last_active: float
    ended_at: float | None
    end_reason: str | None
    message_count: int
    tool_call_count: int
    tokens_in: int
    tokens_out: int
    cost: float
    preview: str = ""
    live: bool = False
    #: How many subagent sessions it started (counted in top-level listings only).
    subagents: int = 0


@attrs.frozen
class SessionListReply:
    """Sessions, newest first."""

    request_id: str
    sessions: list[SessionSummary]


@attrs.frozen
class SearchHitSummary:
    """One matching message."""

    message_id: int
    role: str
    created_at: float
    snippet: str
    tool_name: str | None = None


@attrs.frozen
class SearchMatch:
    """A session found by a search, with its best hits."""

    session: SessionSummary
    hits: list[SearchHitSummary]


@attrs.frozen
class SearchReply:
    """Search results, best first."""

    request_id: str
    matches: list[SearchMatch]


@attrs.frozen
class SessionShowReply:
    """A session's first and last messages; ``omitted`` lie between them."""

    request_id: str
    session: SessionSummary
    head: list[dict[str, Any]]
    tail: list[dict[str, Any]]
    omitted: int


@attrs.frozen
class ExportChunk:
    """Part of an export; ``last`` marks the final chunk."""

    request_id: str
    data: str
    last: bool
