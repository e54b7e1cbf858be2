"""Configuration section ``daemon``: the daemon process, its control socket and its sessions' lifecycles."""

from __future__ import annotations

import os
from typing import Any, NewType

import attrs

from config.validators import integer, positive_int, positive_number

__all__ = ["DaemonConfig", "HostCount"]


def _host_port(instance: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    host, sep, port = str(value).rpartition(":")
    if not (isinstance(value, str) and sep and host and port.isdigit() and int(port) < 65536):
        raise ValueError(f"daemon.{attribute.name} must be HOST:PORT, got {value!r}")


#: The most session-host processes one daemon runs.
MAX_HOSTS = 64

#: ``daemon.hosts``: a count, or ``auto`` in the file. The loader passes its value to the field's converter
#: as it is (a plain ``int`` would refuse ``auto`` before the converter saw it); the validator checks the count.
HostCount = NewType("HostCount", int)


def _hosts(value: Any) -> Any:
    """``auto`` is one host per core; anything else is checked by the validator."""
    if value == "auto":
        return max(1, os.cpu_count() or 1)
    return value


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
        cluster_listen: ``HOST:PORT`` where this daemon accepts requests forwarded by other
            daemons sharing its PostgreSQL store (``store.url``); port 0 picks one. The peers
            authenticate with ``HERMES_ACTORS_CLUSTER_SECRET`` (the environment or ``.env``, at
            least 32 characters). Absent: no peer link; a session another daemon runs is refused.
        cluster_advertise: ``HOST:PORT`` peers reach this daemon at, when not ``cluster_listen``'s own
            (behind a NAT or a proxy). Absent: the address ``cluster_listen`` bound.
        hosts: session-host processes (``auto``: one per core). With 1 the daemon runs its sessions
            itself; with more, the daemon is a front (control socket, HTTP API, platforms, cron) and the
            control socket's sessions run in ``hosts/host:<n>`` child processes (docs/DECISIONS.md#d-session-hosts).
    """

    hibernate_after_seconds: float = attrs.field(default=600.0, converter=float, validator=positive_number)
    max_running_turns: int = attrs.field(default=64, validator=positive_int)
    max_frame_bytes: int = attrs.field(default=1024 * 1024, validator=integer(ge=1024))
    event_replay_size: int = attrs.field(default=1000, validator=positive_int)
    shutdown_timeout_seconds: float = attrs.field(default=10.0, converter=float, validator=positive_number)
    subscriber_buffer: int = attrs.field(default=256, validator=positive_int)
    max_connections: int = attrs.field(default=256, validator=positive_int)
    frame_timeout_seconds: float = attrs.field(default=10.0, converter=float, validator=positive_number)
    cluster_listen: str | None = attrs.field(default=None, validator=attrs.validators.optional(_host_port))
    cluster_advertise: str | None = attrs.field(default=None, validator=attrs.validators.optional(_host_port))
    hosts: HostCount = attrs.field(default=HostCount(1), converter=_hosts, validator=integer(ge=1, le=MAX_HOSTS))
