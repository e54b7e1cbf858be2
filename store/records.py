"""The store's data: what goes in (``SessionMeta``) and what comes out (the rest).

All frozen attrs classes; ``to_json()`` gives the plain dict form the tools
and the CLI print. Times are Unix seconds (floats, UTC).
"""

from __future__ import annotations

import time
from typing import Any

import attrs
from attrs import validators as v

from messages.untrusted import repair_text

__all__ = [
    "LoadedSession",
    "SearchHit",
    "SessionExcerpt",
    "SessionInfo",
    "SessionMatches",
    "SessionMeta",
    "StoredMessage",
    "TranscriptRecord",
]

# '#' is reserved for the internal lineage rows ("<id>#<epoch>").
_id = [v.instance_of(str), v.matches_re(r"[^#\s]{1,200}")]
_opt_str = v.optional(v.instance_of(str))


def _repaired(value: Any) -> Any:
    # The store's last line of defence: SQLite cannot bind a str holding a lone surrogate.
    return repair_text(value) if isinstance(value, str) else value


def _to_json(obj: Any) -> dict[str, Any]:
    return attrs.asdict(obj, recurse=True)


@attrs.frozen
class SessionMeta:
    """What a session is created with.

    Attributes:
        id: the stable id the user sees; it never changes, even across compressions
            (1-200 characters, no whitespace, no '#').
        parent_session_id: the session that spawned this one (a subagent's parent), or None.
        source: where it came from: ``cli``, ``api``, ``cron``, ``subagent``, ...
        model: the model the session started with.
        title: unique across live sessions when set.
        cwd: the working directory of the client that started it.
        started_at: creation time.
    """

    id: str = attrs.field(validator=_id, converter=_repaired)
    parent_session_id: str | None = attrs.field(default=None, validator=_opt_str, converter=_repaired)
    source: str = attrs.field(default="cli", validator=v.instance_of(str), converter=_repaired)
    model: str | None = attrs.field(default=None, validator=_opt_str, converter=_repaired)
    title: str | None = attrs.field(default=None, validator=_opt_str, converter=_repaired)
    cwd: str | None = attrs.field(default=None, validator=_opt_str, converter=_repaired)
    started_at: float = attrs.field(factory=time.time, converter=float)


@attrs.frozen
class SessionInfo:
    """A session's row: its metadata plus what the store counted.

    ``epoch`` counts compressions: the live history is the messages of the
    current epoch; older epochs stay searchable and exportable.
    ``preview`` is the start of the first user message ('' when none), ending before
    its first NUL: SQLite's ``substr`` stops there, and every store shows the same.
    """

    id: str
    parent_session_id: str | None
    source: str
    model: str | None
    title: str | None
    cwd: str | None
    started_at: float
    last_active: float
    ended_at: float | None
    end_reason: str | None
    message_count: int
    tool_call_count: int
    tokens_in: int
    tokens_out: int
    cost: float
    epoch: int
    preview: str = attrs.field(default="", converter=lambda text: text.partition("\x00")[0])

    @property
    def meta(self) -> SessionMeta:
        """The creation-time part of this row."""
        return SessionMeta(
            id=self.id,
            parent_session_id=self.parent_session_id,
            source=self.source,
            model=self.model,
            title=self.title,
            cwd=self.cwd,
            started_at=self.started_at,
        )

    def to_json(self) -> dict[str, Any]:
        """Plain-dict form for JSON output."""
        return _to_json(self)


@attrs.frozen
class StoredMessage:
    """One stored message with its place in the store.

    ``message`` is the dict exactly as appended (provider extras included).
    """

    id: int
    session_id: str
    epoch: int
    created_at: float
    message: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        """Plain-dict form for JSON output."""
        return _to_json(self)


@attrs.frozen
class TranscriptRecord:
    """A record the model never sees (a sandbox tool call, an operator action, ...)."""

    id: int
    session_id: str
    created_at: float
    record: dict[str, Any]


@attrs.frozen
class LoadedSession:
    """Everything a session actor needs to resume: metadata, live history and state.

    ``messages`` are the current epoch's messages in order; ``state`` is the
    last ``save_state`` blob, or None when none was saved.
    """

    info: SessionInfo
    messages: list[dict[str, Any]]
    state: dict[str, Any] | None

    @property
    def meta(self) -> SessionMeta:
        """The session's creation-time metadata."""
        return self.info.meta


@attrs.frozen
class SearchHit:
    """One message matching a search, with a snippet of its text around the match."""

    message_id: int
    session_id: str
    role: str
    created_at: float
    snippet: str
    tool_name: str | None = None


@attrs.frozen
class SessionMatches:
    """A session found by a search and its best-ranked matching messages (best first)."""

    session: SessionInfo
    hits: tuple[SearchHit, ...]

    def to_json(self) -> dict[str, Any]:
        """Plain-dict form for JSON output."""
        return _to_json(self)


@attrs.frozen
class SessionExcerpt:
    """A session read for a human or a model: its first and last messages.

    ``omitted`` is how many messages lie between ``head`` and ``tail``.
    """

    session: SessionInfo
    head: tuple[StoredMessage, ...]
    tail: tuple[StoredMessage, ...]
    omitted: int

    def to_json(self) -> dict[str, Any]:
        """Plain-dict form for JSON output."""
        return _to_json(self)
