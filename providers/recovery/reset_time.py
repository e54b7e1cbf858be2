"""Parse the limit-reset times providers put in error bodies and headers."""

from __future__ import annotations

import datetime as dt

# Values above these are epoch milliseconds / epoch seconds; anything smaller is
# taken as a number of seconds from now (the Retry-After convention).
_EPOCH_MS_FLOOR = 1e11
_EPOCH_S_FLOOR = 1e9


def parse_reset_time(value: object, *, now: float) -> float | None:
    """Epoch seconds at which a limit resets, or ``None`` if ``value`` says nothing usable.

    Accepts epoch seconds, epoch milliseconds, a count of seconds from ``now``
    (numbers or numeric strings), and ISO-8601 timestamps (``Z`` or an offset;
    a naive one is UTC). A time not after ``now`` is ignored.
    """
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        number = float(value)
    elif isinstance(value, str):
        text = value.strip()
        try:
            number = float(text)
        except ValueError:
            return _parse_iso(text, now=now)
    else:
        return None
    if number != number or number < 0:  # NaN or negative
        return None
    if number >= _EPOCH_MS_FLOOR:
        at = number / 1000.0
    elif number >= _EPOCH_S_FLOOR:
        at = number
    else:
        at = now + number
    return at if at > now else None


def _parse_iso(text: str, *, now: float) -> float | None:
    try:
        parsed = dt.datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.timezone.utc)
    at = parsed.timestamp()
    return at if at > now else None
