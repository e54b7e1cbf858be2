"""Configuration section ``daemon``: the daemon process, its control socket and its sessions' lifecycles."""

from __future__ import annotations

import attrs

from config.validators import integer, positive_int, positive_number

__all__ = ["DaemonConfig"]


@attrs.frozen
class DaemonConfig:
    """Section ``daemon``: limits and timeouts of the daemon.

    Attributes:
        hibernate_after_seconds: an idle session with no subscriber, pending request,
            queued message or live background process leaves memory after this long
            (its state stays in the store; it wakes on the next attach or message).
        max_running_turns: turns allowed to run at once across all sessions; one more
            gets a clear "busy" error.
        max_frame_bytes: the largest frame the control socket accepts from a client.
        event_replay_size: events each session keeps for ``attach --since N``.
        shutdown_timeout_seconds: a graceful stop (SIGTERM, SIGINT, ``hermes-actors stop``)
            interrupts turns, commits and removes the socket within this bound; the
            process then exits regardless.
        subscriber_buffer: events queued for one attached client; a client that falls
            this far behind is dropped with a reason instead of slowing the session.
        max_connections: control-socket clients served at once; one more gets a ``busy``
            error frame ("too many connections") and is closed. It bounds the descriptors
            clients can hold, so running turns never meet ``Too many open files``.
        frame_timeout_seconds: a client must send its Hello, and finish any frame it has
            started, within this long, or it is dropped (``not_hello``, ``bad_frame``).
            An attached client that sends nothing is never timed out.
    """

    hibernate_after_seconds: float = attrs.field(default=600.0, converter=float, validator=positive_number)
    max_running_turns: int = attrs.field(default=64, validator=positive_int)
    max_frame_bytes: int = attrs.field(default=1024 * 1024, validator=integer(ge=1024))
    event_replay_size: int = attrs.field(default=1000, validator=positive_int)
    shutdown_timeout_seconds: float = attrs.field(default=10.0, converter=float, validator=positive_number)
    subscriber_buffer: int = attrs.field(default=256, validator=positive_int)
    max_connections: int = attrs.field(default=256, validator=positive_int)
    frame_timeout_seconds: float = attrs.field(default=10.0, converter=float, validator=positive_number)
