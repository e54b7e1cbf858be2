"""What the retry loop reports it is doing while it recovers.

The loop tells its ``on_status`` sink a :class:`StatusKind` and a line of text;
the session turns them into its ``messages.events.StatusUpdate`` event.
"""

from __future__ import annotations

import enum


class StatusKind(enum.Enum):
    """What the retry loop is doing about a failure."""

    retry = "retry"  # trying the same provider again at once
    backoff = "backoff"  # waiting before the next attempt
    rotate_credential = "rotate_credential"  # switched to another key of the same provider
    fallback = "fallback"  # switched to the next provider of the fallback chain
    rebuild_client = "rebuild_client"  # dropped and rebuilt the HTTP client after a transport failure
    strip_reasoning = "strip_reasoning"  # re-sending without thinking blocks the provider rejected
    lower_max_tokens = "lower_max_tokens"  # re-sending with the output cap the provider said fits
    sanitize = "sanitize"  # removed invalid characters from the history before sending
    partial_output = "partial_output"  # a stream failed after text was shown; the retry restarts it
    compress = "compress"  # handing back to the caller to compress the history
    give_up = "give_up"  # no recovery left
