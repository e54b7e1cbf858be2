"""The ``session_search`` tool: the model's recall of past conversations, in Hermes Agent's shapes.

Four calling shapes over the session store (``ctx.store``, a ``store.SessionSearchReader``), chosen by
the arguments given, as in Hermes:

- discovery (``query``): full-text search (sessions grouped, best first, or ``sort`` newest/oldest;
  ``limit`` 3 by default, at most 10), by role (``role_filter``, comma-separated, default
  ``user,assistant``). Each result carries the session's first and last user and assistant messages
  (``bookend_start``, ``bookend_end``), the match's ``snippet`` and the messages around it (the hit
  flagged ``anchor``). The live history of the calling session is left out: it is already in context.
- scroll (``session_id`` and ``around_message_id``): the messages around one message, ``window`` a side.
- read (``session_id`` alone): a session's first 20 and last 10 messages.
- browse (nothing): recently active sessions with a preview of each.

Discovery and scroll say where the window sits (``match_message_id``, ``messages_before``,
``messages_after``), message ids are integers, and ``profile`` (or ``session_id='<profile>/<id>'``, a
link's form) is Hermes's: a profile's history is its own daemon's, so only this session's profile is there.
``date_from``, ``date_to`` and ``source`` narrow discovery and browsing (the spec's date range and
platform: docs/DECISIONS.md#d-session-search). Every failure is an ``{"error": ...}`` result the model can act on.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from control.profiles import profile_name_of
from store.codec import message_text
from store.errors import MessageNotFoundError, SessionNotFoundError, StoreError
from store.query import MAX_SEARCH_LIMIT, SEARCHABLE_ROLES
from store.records import SessionInfo, SessionMatches, StoredMessage
from tools.errors import ToolError, ToolInputError
from tools.results import ToolResult

if TYPE_CHECKING:
    from tools.context import SessionSearchStore, ToolContext
    from tools.registry import ToolEntry, ToolRegistry

__all__ = ["SESSION_SEARCH_SCHEMA", "register_session_search", "session_search"]

DEFAULT_LIMIT: Final = 3
DEFAULT_WINDOW: Final = 5
# User and assistant messages shown at each end of a discovered session.
BOOKEND: Final = 3
MAX_WINDOW: Final = 20
READ_HEAD: Final = 20
READ_TAIL: Final = 10
# Each message shown to the model is cut to this many characters.
MESSAGE_PREVIEW_CHARS: Final = 1_500

SESSION_SEARCH_SCHEMA: Final[dict[str, Any]] = {
    "name": "session_search",
    "description": (
        "Search and read your past conversations with the user (long-term recall); the current one is not "
        "searched. Shapes: query -> discovery (sessions that match, each with its first and last messages, the "
        "match's snippet and the messages around it; FTS syntax: \"exact phrase\", prefix*, OR, NOT; "
        "substrings and CJK text work too); session_id + around_message_id -> the messages around that one "
        "(pass the last id to scroll forward, the first to scroll back); session_id alone -> the session's "
        "first 20 and last 10 messages; no arguments -> recent sessions. A discovered session's "
        "match_message_id is where to scroll from; messages_before or messages_after below the window means "
        "the session's start or end. An @session:<profile>/<id> link is session_id=<id>, profile=<profile>. "
        "Past conversations are not evidence of what a source (a URL, a file, a chat, a live system) holds "
        "now: when the user names one, look at it first, and never conclude 'not found' from this search alone."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "Words to look for; omit to browse recent sessions."},
            "limit": {"type": "integer", "default": DEFAULT_LIMIT, "description": f"Sessions to return (1-{MAX_SEARCH_LIMIT})."},
            "sort": {"type": "string", "enum": ["newest", "oldest"], "description": "Order discovered sessions by date."},
            "session_id": {"type": "string", "description": "A session from a result: read it, or scroll in it."},
            "around_message_id": {
                "type": "integer",
                "description": "The message to center the window on: a result's match_message_id or any message id.",
            },
            "window": {"type": "integer", "default": DEFAULT_WINDOW, "description": f"Messages per side (0-{MAX_WINDOW})."},
            "role_filter": {"type": "string", "description": "Comma-separated roles to search (default 'user,assistant')."},
            "date_from": {"type": "string", "description": "Earliest date, YYYY-MM-DD or ISO 8601 (UTC)."},
            "date_to": {"type": "string", "description": "Latest date, inclusive, YYYY-MM-DD or ISO 8601 (UTC)."},
            "source": {"type": "string", "description": "Only sessions from this source: cli, api, cron, ..."},
            "profile": {
                "type": "string",
                "description": "The profile of an @session:<profile>/<id> link. Only this session's own profile is searchable: omit it.",
            },
        },
        "required": [],
        "additionalProperties": False,
    },
}


class _BadArgument(ToolInputError):
    """An argument the handler cannot use; the message is for the model."""


def _iso(timestamp: float | None) -> str | None:
    if timestamp is None:
        return None
    return datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="seconds")


def _parse_date(value: Any, name: str, *, end_of_day: bool) -> float | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise _BadArgument(f"{name} must be a date string like 2025-01-31")
    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError:
        raise _BadArgument(f"{name} {value!r} is not a date: use YYYY-MM-DD or ISO 8601") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    date_only = len(value.strip()) == 10
    if end_of_day and date_only:
        # A bare end date includes that whole day.
        parsed += timedelta(days=1, microseconds=-1)
    return parsed.timestamp()


def _int(args: dict[str, Any], name: str, default: int, low: int, high: int) -> int:
    value = args.get(name, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise _BadArgument(f"{name} must be an integer from {low} to {high}, got {value!r}")
    return value


def _shape(args: dict[str, Any]) -> str:
    """Which call the arguments make, as Hermes decides it."""
    if args.get("query"):
        return "search"
    if args.get("around_message_id") not in (None, ""):
        return "scroll"
    if args.get("session_id"):
        return "read"
    return "browse"


def _limit(args: dict[str, Any]) -> int:
    """``limit`` clamped to 1..MAX_SEARCH_LIMIT, as Hermes does (a model's 50 means 'many', not an error)."""
    value = args.get("limit", DEFAULT_LIMIT)
    if isinstance(value, bool) or not isinstance(value, int):
        raise _BadArgument(f"limit must be an integer, got {value!r}")
    return max(1, min(value, MAX_SEARCH_LIMIT))


def _roles(args: dict[str, Any]) -> tuple[str, ...]:
    roles = args.get("role_filter") or "user,assistant"
    if isinstance(roles, str):
        roles = [part.strip() for part in roles.split(",") if part.strip()]
    if not isinstance(roles, list) or not roles or any(r not in SEARCHABLE_ROLES for r in roles):
        raise _BadArgument(f"role_filter must be comma-separated roles from {', '.join(sorted(SEARCHABLE_ROLES))}")
    return tuple(roles)


def _session(info: SessionInfo) -> dict[str, Any]:
    return {
        "session_id": info.id,
        "title": info.title,
        "source": info.source,
        "model": info.model,
        "started_at": _iso(info.started_at),
        "last_active": _iso(info.last_active),
        "ended": info.end_reason,
        "message_count": info.message_count,
    }


def _message(stored: StoredMessage) -> dict[str, Any]:
    body, calls = message_text(stored.message)
    text = body if not calls else f"{body}\n[tool calls] {calls}".strip()
    if len(text) > MESSAGE_PREVIEW_CHARS:
        text = text[:MESSAGE_PREVIEW_CHARS] + f"… [{len(text) - MESSAGE_PREVIEW_CHARS} more characters]"
    shown: dict[str, Any] = {"id": stored.id, "role": stored.message.get("role"), "when": _iso(stored.created_at)}
    tool = stored.message.get("tool_name") or stored.message.get("name")
    if tool:
        shown["tool_name"] = tool
    shown["content"] = text
    return shown


def _conversational(messages: list[StoredMessage]) -> list[StoredMessage]:
    return [m for m in messages if m.message.get("role") in ("user", "assistant")]


async def _search(args: dict[str, Any], ctx: ToolContext, store: SessionSearchStore) -> dict[str, Any]:
    query = args["query"]
    if not isinstance(query, str) or not query.strip():
        raise _BadArgument("query must be non-empty text")
    since = _parse_date(args.get("date_from"), "date_from", end_of_day=False)
    until = _parse_date(args.get("date_to"), "date_to", end_of_day=True)
    sort = args.get("sort")
    if sort not in (None, "newest", "oldest"):
        raise _BadArgument(f"sort must be 'newest' or 'oldest', got {sort!r}")
    found = await store.search(
        query, limit=_limit(args), roles=_roles(args), since=since, until=until,
        source=args.get("source") or None, current_session_id=ctx.session_id,
    )  # fmt: skip
    if sort is not None:
        found = sorted(found, key=lambda match: match.session.started_at or 0.0, reverse=sort == "newest")
    results = [await _discovered(match, ctx, store) for match in found]
    reply: dict[str, Any] = {"success": True, "query": query, "count": len(results), "results": results}
    if results:
        reply["hint"] = "session_id with around_message_id scrolls from a message; session_id alone reads the session."
    else:
        reply["hint"] = "No match. Try fewer or other words, a prefix like deploy*, OR between words, or no query to browse."
    return reply


async def _discovered(match: SessionMatches, ctx: ToolContext, store: SessionSearchStore) -> dict[str, Any]:
    """One discovered session as Hermes shows it: bookends, the snippet, and the messages around the hit."""
    info, hit = match.session, match.hits[0]
    excerpt = await store.read_session(info.id, head=BOOKEND * 4, tail=BOOKEND * 4)
    around = await store.scroll(hit.message_id, before=DEFAULT_WINDOW, after=DEFAULT_WINDOW)
    # Head and tail are disjoint and in order: a short session is all head.
    ends = _conversational([*excerpt.head, *excerpt.tail])
    result: dict[str, Any] = {
        "session_id": info.id,
        "title": info.title,
        "when": _iso(info.started_at),
        "source": info.source,
        "snippet": hit.snippet,
        "bookend_start": [_message(m) for m in ends[:BOOKEND]],
        "match_message_id": hit.message_id,
        "messages": _window(around, hit.message_id),
        "bookend_end": [_message(m) for m in ends[-BOOKEND:]],
        **_sides(around, hit.message_id),
        "match_count": len(match.hits),
    }
    if info.id == ctx.session_id:
        # Only compressed-away parts of the current conversation can match it.
        result["earlier_in_this_session"] = True
    return result


async def _scroll(args: dict[str, Any], ctx: ToolContext, store: SessionSearchStore) -> dict[str, Any]:
    raw = args.get("around_message_id")
    message_id = int(raw) if isinstance(raw, str) and raw.strip().isdigit() else raw
    if isinstance(message_id, bool) or not isinstance(message_id, int) or message_id < 1:
        raise _BadArgument("around_message_id must be a message id from a result (its 'id')")
    window = _int(args, "window", DEFAULT_WINDOW, 0, MAX_WINDOW)
    messages = await store.scroll(message_id, before=window, after=window)
    session_id = args.get("session_id")
    if session_id and messages[0].session_id != session_id:
        raise MessageNotFoundError(message_id)
    return {
        "success": True,
        "session_id": messages[0].session_id,
        "around_message_id": message_id,
        "window": window,
        "messages": _window(messages, message_id),
        **_sides(messages, message_id),
    }


def _window(messages: list[StoredMessage], anchor: int) -> list[dict[str, Any]]:
    return [{**_message(m), **({"anchor": True} if m.id == anchor else {})} for m in messages]


def _sides(messages: list[StoredMessage], anchor: int) -> dict[str, int]:
    """How many of ``messages`` lie before and after the anchor: fewer than the window asked means the
    session's start or end (Hermes's ``messages_before`` / ``messages_after``)."""
    before = sum(1 for m in messages if m.id < anchor)
    return {"messages_before": before, "messages_after": sum(1 for m in messages if m.id > anchor)}


async def _read(args: dict[str, Any], ctx: ToolContext, store: SessionSearchStore) -> dict[str, Any]:
    session_id = args["session_id"]  # _shape chose "read": it is given
    excerpt = await store.read_session(session_id, head=READ_HEAD, tail=READ_TAIL)
    return {
        "success": True,
        **_session(excerpt.session),
        "first_messages": [_message(m) for m in excerpt.head],
        "omitted_messages": excerpt.omitted,
        "last_messages": [_message(m) for m in excerpt.tail],
    }


async def _browse(args: dict[str, Any], ctx: ToolContext, store: SessionSearchStore) -> dict[str, Any]:
    infos = await store.browse(limit=_limit(args), source=args.get("source") or None, exclude_session_id=ctx.session_id)
    return {"success": True, "sessions": [{**_session(i), "preview": i.preview} for i in infos]}


def _in_this_profile(args: dict[str, Any], home: Path) -> dict[str, Any]:
    """``args`` with a link's ``<profile>/<id>`` session id split, once its profile is known to be this one.

    Raises:
        ToolError: another profile is named: its history is its own daemon's, out of this session's reach.
    """
    profile = args.get("profile")
    session_id = args.get("session_id")
    if isinstance(session_id, str) and "/" in session_id:
        # A session id never holds '/': the whole link value was passed.
        linked, _, session_id = session_id.partition("/")
        profile = profile or linked
        args = {**args, "session_id": session_id}
    own = profile_name_of(home)
    if profile not in (None, "", own):
        raise ToolError(
            f"No profile {profile!r} here: this session belongs to profile {own!r}, and each profile's history "
            "is kept by its own daemon. Omit profile to search this one."
        )
    return args


_SHAPES = {"search": _search, "scroll": _scroll, "read": _read, "browse": _browse}


async def session_search(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    """Run one ``session_search`` call (see the module docstring).

    Raises:
        ToolError: no store, a bad argument, an unknown session or message, or a store failure;
            the message says what to do instead.
    """
    store = ctx.store
    if store is None:
        raise ToolError("session_search is not available: this session has no session store")
    args = _in_this_profile(args, ctx.home)
    try:
        return ToolResult(await _SHAPES[_shape(args)](args, ctx, store))
    except SessionNotFoundError:
        raise ToolError(f"No session {args.get('session_id')!r}. Call with no arguments, or with a query, to find session ids.") from None
    except MessageNotFoundError:
        raise ToolError(f"No message {args.get('around_message_id')!r} there. Use a message 'id' from a result.") from None
    except StoreError as exc:
        raise ToolError(f"session_search failed: {exc}") from exc


def register_session_search(registry: ToolRegistry) -> ToolEntry:
    """Register ``session_search`` (toolset ``session_search``; read-only, so parallel-safe)."""
    return registry.register(
        "session_search",
        "session_search",
        SESSION_SEARCH_SCHEMA,
        session_search,
        parallel_safe=True,
        emoji="🔍",
    )
