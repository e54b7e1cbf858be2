"""The ``session_search`` tool: the model's recall of past conversations.

Four actions over the session store (``ctx.store``, a ``store.SessionSearchReader``):

- ``search``: full-text discovery by ``query`` (sessions grouped, best first,
  ``limit`` 3 by default, 1-10), filtered by role (user and assistant unless
  ``role_filter`` or ``include_tools`` say otherwise), date range and source.
  The live history of the calling session is left out: it is already in context.
- ``scroll``: the messages around one ``message_id`` from a search result.
- ``read``: a session's first 20 and last 10 messages.
- ``browse``: recently active sessions with a preview of each.

Without ``action`` the arguments decide: a query searches, a message_id
scrolls, a session_id reads, nothing browses. Every failure is an
``{"error": ...}`` result the model can act on.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Final

from store.codec import message_text
from store.errors import MessageNotFoundError, SessionNotFoundError, StoreError
from store.query import MAX_SEARCH_LIMIT, SEARCHABLE_ROLES
from store.records import SessionInfo, StoredMessage
from tools.errors import ToolError, ToolInputError
from tools.results import ToolResult

if TYPE_CHECKING:
    from tools.context import ToolContext
    from tools.registry import ToolEntry, ToolRegistry

__all__ = ["SESSION_SEARCH_SCHEMA", "register_session_search", "session_search"]

ACTIONS: Final = ("search", "scroll", "read", "browse")
DEFAULT_SEARCH_LIMIT: Final = 3
DEFAULT_BROWSE_LIMIT: Final = 10
MAX_BROWSE_LIMIT: Final = 50
DEFAULT_WINDOW: Final = 5
MAX_WINDOW: Final = 20
READ_HEAD: Final = 20
READ_TAIL: Final = 10
# Each message shown to the model is cut to this many characters.
MESSAGE_PREVIEW_CHARS: Final = 1_500

SESSION_SEARCH_SCHEMA: Final[dict[str, Any]] = {
    "name": "session_search",
    "description": (
        "Search and read your past conversations with the user (long-term recall). "
        "action=search finds sessions by words (FTS syntax: \"exact phrase\", prefix*, OR, NOT; "
        "substrings and CJK text work too); action=scroll shows the messages around a message_id "
        "from a result; action=read shows a session's first 20 and last 10 messages; "
        "action=browse lists recent sessions. Without action: query -> search, message_id -> scroll, "
        "session_id -> read, nothing -> browse. The current conversation is not searched."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": list(ACTIONS)},
            "query": {"type": "string", "description": "Words to look for (search)."},
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_BROWSE_LIMIT,
                "description": f"Sessions to return: search 1-{MAX_SEARCH_LIMIT} (default 3), browse (default 10).",
            },
            "role_filter": {
                "type": "array",
                "items": {"type": "string", "enum": sorted(SEARCHABLE_ROLES)},
                "description": "Roles to search (default: user and assistant).",
            },
            "include_tools": {"type": "boolean", "description": "Also search tool output (search)."},
            "date_from": {"type": "string", "description": "Earliest date, YYYY-MM-DD or ISO 8601 (UTC)."},
            "date_to": {"type": "string", "description": "Latest date, inclusive, YYYY-MM-DD or ISO 8601 (UTC)."},
            "source": {"type": "string", "description": "Only sessions from this source: cli, api, cron, ..."},
            "session_id": {"type": "string", "description": "The session to read."},
            "message_id": {"type": "integer", "minimum": 1, "description": "The message to scroll around."},
            "window": {
                "type": "integer",
                "minimum": 0,
                "maximum": MAX_WINDOW,
                "description": f"Messages shown on each side when scrolling (default {DEFAULT_WINDOW}).",
            },
        },
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


def _action(args: dict[str, Any]) -> str:
    action = args.get("action")
    if action is None:
        if args.get("query"):
            return "search"
        if args.get("message_id") is not None:
            return "scroll"
        if args.get("session_id"):
            return "read"
        return "browse"
    if action not in ACTIONS:
        raise _BadArgument(f"action must be one of {', '.join(ACTIONS)}, got {action!r}")
    return action


def _roles(args: dict[str, Any]) -> tuple[str, ...]:
    roles = args.get("role_filter")
    if roles is None:
        roles = ["user", "assistant"]
    if isinstance(roles, str):
        roles = [part.strip() for part in roles.split(",") if part.strip()]
    if not isinstance(roles, list) or not roles or any(r not in SEARCHABLE_ROLES for r in roles):
        raise _BadArgument(f"role_filter must be a list of roles from {sorted(SEARCHABLE_ROLES)}")
    if args.get("include_tools") and "tool" not in roles:
        roles = [*roles, "tool"]
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
    shown: dict[str, Any] = {"message_id": stored.id, "role": stored.message.get("role"), "at": _iso(stored.created_at)}
    tool = stored.message.get("tool_name") or stored.message.get("name")
    if tool:
        shown["tool_name"] = tool
    shown["text"] = text
    return shown


async def _search(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    query = args.get("query")
    if not isinstance(query, str) or not query.strip():
        raise _BadArgument("search needs a non-empty query")
    since = _parse_date(args.get("date_from"), "date_from", end_of_day=False)
    until = _parse_date(args.get("date_to"), "date_to", end_of_day=True)
    found = await ctx.store.search(
        query,
        limit=_int(args, "limit", DEFAULT_SEARCH_LIMIT, 1, MAX_SEARCH_LIMIT),
        roles=_roles(args),
        since=since,
        until=until,
        source=args.get("source") or None,
        current_session_id=ctx.session_id,
    )
    results = [
        {
            **_session(match.session),
            # Only compressed-away parts of the current conversation can match it.
            **({"earlier_in_this_session": True} if match.session.id == ctx.session_id else {}),
            "matches": [
                {
                    "message_id": hit.message_id,
                    "role": hit.role,
                    **({"tool_name": hit.tool_name} if hit.tool_name else {}),
                    "at": _iso(hit.created_at),
                    "snippet": hit.snippet,
                }
                for hit in match.hits
            ],
        }
        for match in found
    ]
    reply: dict[str, Any] = {"action": "search", "query": query, "count": len(results), "results": results}
    if results:
        reply["hint"] = "action=scroll with a message_id shows the conversation around it; action=read reads a session."
    else:
        reply["hint"] = "No match. Try fewer or other words, a prefix like deploy*, or action=browse."
    return reply


async def _scroll(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    message_id = args.get("message_id")
    if isinstance(message_id, bool) or not isinstance(message_id, int) or message_id < 1:
        raise _BadArgument("scroll needs message_id, a positive integer from a search result")
    window = _int(args, "window", DEFAULT_WINDOW, 0, MAX_WINDOW)
    messages = await ctx.store.scroll(message_id, before=window, after=window)
    return {
        "action": "scroll",
        "session_id": messages[0].session_id,
        "message_id": message_id,
        "messages": [_message(m) for m in messages],
    }


async def _read(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    session_id = args.get("session_id")
    if not isinstance(session_id, str) or not session_id:
        raise _BadArgument("read needs a session_id")
    excerpt = await ctx.store.read_session(session_id, head=READ_HEAD, tail=READ_TAIL)
    return {
        "action": "read",
        **_session(excerpt.session),
        "first_messages": [_message(m) for m in excerpt.head],
        "omitted_messages": excerpt.omitted,
        "last_messages": [_message(m) for m in excerpt.tail],
    }


async def _browse(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    infos = await ctx.store.browse(
        limit=_int(args, "limit", DEFAULT_BROWSE_LIMIT, 1, MAX_BROWSE_LIMIT),
        source=args.get("source") or None,
        exclude_session_id=ctx.session_id,
    )
    return {"action": "browse", "sessions": [{**_session(i), "preview": i.preview} for i in infos]}


_ACTIONS = {"search": _search, "scroll": _scroll, "read": _read, "browse": _browse}


async def session_search(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    """Run one ``session_search`` call (see the module docstring).

    Raises:
        ToolError: no store, a bad argument, an unknown session or message, or a store failure;
            the message says what to do instead.
    """
    if ctx.store is None:
        raise ToolError("session_search is not available: this session has no session store")
    try:
        return ToolResult(await _ACTIONS[_action(args)](args, ctx))
    except SessionNotFoundError:
        raise ToolError(f"No session {args.get('session_id')!r}. Use action=browse or search to find session ids.") from None
    except MessageNotFoundError:
        raise ToolError(f"No message {args.get('message_id')!r}. Use a message_id from a search result.") from None
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
