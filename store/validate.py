"""Argument checks shared by both store implementations, so both refuse the same things the same way."""

from __future__ import annotations

from typing import Any

from messages.untrusted import repair_text
from store.errors import InvalidQueryError, InvalidRecordError

__all__ = [
    "check_browse_limit",
    "check_count",
    "check_dict",
    "check_excerpt",
    "check_listing",
    "check_reason",
    "check_scroll",
    "check_job_id",
    "check_session_id",
    "check_title",
    "check_usage",
]

MAX_LIST = 1000
MAX_BROWSE = 100
MAX_EXCERPT = 500
MAX_SCROLL_WINDOW = 100


def check_session_id(value: Any) -> str:
    """A session id argument.

    Raises:
        InvalidRecordError: not a non-empty string.
    """
    if not isinstance(value, str) or not value:
        raise InvalidRecordError(f"a session id must be a non-empty string, got {value!r}")
    return value


def check_job_id(value: Any) -> str:
    """A scheduled job's id argument.

    Raises:
        InvalidRecordError: not a non-empty string of at most 64 characters.
    """
    if not isinstance(value, str) or not value or len(value) > 64:
        raise InvalidRecordError(f"a cron job id must be a non-empty string of at most 64 characters, got {value!r}")
    return value


def check_count(name: str, value: Any, low: int = 0, high: int | None = None) -> int:
    """An integer argument within bounds (limits, offsets, windows).

    Raises:
        InvalidQueryError: not an integer, or out of bounds.
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < low or (high is not None and value > high):
        bounds = f"from {low} to {high}" if high is not None else f">= {low}"
        raise InvalidQueryError(f"{name} must be an integer {bounds}, got {value!r}")
    return value


def check_dict(what: str, value: Any) -> dict[str, Any]:
    """A state blob or transcript record.

    Raises:
        InvalidRecordError: not a dict.
    """
    if not isinstance(value, dict):
        raise InvalidRecordError(f"{what} must be a dict, got {type(value).__name__}")
    return value


def check_reason(value: Any) -> str:
    """An end reason.

    Raises:
        InvalidRecordError: not a non-empty string.
    """
    if not isinstance(value, str) or not value:
        raise InvalidRecordError("an end reason must be a non-empty string")
    return value


def check_title(value: Any) -> str | None:
    """A title, or None to clear it (lone surrogates repaired).

    Raises:
        InvalidRecordError: blank or not a string.
    """
    if value is not None and (not isinstance(value, str) or not value.strip()):
        raise InvalidRecordError("a title must be a non-blank string or None")
    return None if value is None else repair_text(value)


def check_usage(tokens_in: Any, tokens_out: Any, tool_calls: Any, cost: Any) -> float:
    """Counter increments; returns the cost as a float.

    Raises:
        InvalidRecordError: a negative or non-integer count, or a cost that is not a finite number >= 0.
    """
    for name, value in (("tokens_in", tokens_in), ("tokens_out", tokens_out), ("tool_calls", tool_calls)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise InvalidRecordError(f"{name} must be an integer >= 0, got {value!r}")
    if isinstance(cost, bool) or not isinstance(cost, int | float) or not 0 <= cost < float("inf"):
        raise InvalidRecordError(f"cost must be a finite non-negative number, got {cost!r}")
    return float(cost)


def check_listing(limit: Any, offset: Any) -> tuple[int, int]:
    """``list_sessions`` paging: limit 1-1000, offset >= 0."""
    return check_count("limit", limit, 1, MAX_LIST), check_count("offset", offset)


def check_browse_limit(limit: Any) -> int:
    """``browse``: limit 1-100."""
    return check_count("limit", limit, 1, MAX_BROWSE)


def check_excerpt(head: Any, tail: Any) -> tuple[int, int]:
    """``read_session``: head and tail 0-500 each."""
    return check_count("head", head, 0, MAX_EXCERPT), check_count("tail", tail, 0, MAX_EXCERPT)


def check_scroll(message_id: Any, before: Any, after: Any) -> tuple[int, int, int]:
    """``scroll``: a positive message id, windows 0-100."""
    return (
        check_count("message_id", message_id, 1),
        check_count("before", before, 0, MAX_SCROLL_WINDOW),
        check_count("after", after, 0, MAX_SCROLL_WINDOW),
    )
