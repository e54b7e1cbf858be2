"""Errors of the daemon, its control socket and the CLI.

The tree::

    PlatformError (RuntimeError)
    ├── DaemonAlreadyRunning    another daemon holds the lock on this HERMES_ACTORS_HOME
    ├── DaemonNotRunning        no daemon answers on the control socket
    ├── DaemonStartFailed       a background start did not bring a daemon up in time
    ├── InvalidText             (CLI side) a request holds text that is not valid UTF-8 (a directory's name)
    ├── ProfileError            (CLI side) a bad or unknown profile name, or one that cannot be created
    ├── SocketSetupError        the control socket or its directory cannot be made private and bound
    ├── ProtocolError           the peer broke the control conversation (bad frame, wrong hello)
    │   ├── BadFrame            (daemon side) a client's frame could not be decoded
    │   └── VersionMismatch     the two sides speak different protocol versions
    └── RequestFailed           the daemon answered a request with an ErrorReply (``code``, text)

The daemon turns anything a client does wrong into an ``ErrorReply`` frame;
these classes are what the Python side raises, translated once at the socket
boundary.
"""

from __future__ import annotations

__all__ = [
    "EXIT_ALREADY_RUNNING",
    "EXIT_FAILURE",
    "EXIT_NOT_FOUND",
    "BadFrame",
    "DaemonAlreadyRunning",
    "DaemonNotRunning",
    "DaemonStartFailed",
    "InvalidText",
    "PlatformError",
    "ProfileError",
    "ProtocolError",
    "RequestFailed",
    "SocketSetupError",
    "VersionMismatch",
]

#: Exit statuses of the CLI and the daemon.
EXIT_FAILURE = 1  # no daemon, a refused request, a failed turn
EXIT_NOT_FOUND = 2  # bad usage, an unknown path or session, a bad configuration
EXIT_ALREADY_RUNNING = 3  # the daemon: another one holds this home's lock


class PlatformError(RuntimeError):
    """Base of every daemon, control-socket and CLI error."""


class DaemonAlreadyRunning(PlatformError):
    """Another daemon holds this home's lock; ``pid`` is its process id when known."""

    def __init__(self, home: str, pid: int | None) -> None:
        shown = f" (pid {pid})" if pid else ""
        super().__init__(f"a daemon is already running for {home}{shown}; stop it with `hermes-actors stop`")
        self.pid = pid


class DaemonNotRunning(PlatformError):
    """Nothing answers on the control socket."""


class DaemonStartFailed(PlatformError):
    """A daemon started in the background did not answer in time (see its log)."""


class InvalidText(PlatformError):
    """A request for the daemon holds a string that is not valid UTF-8, so no frame can carry it.

    Text the user typed is repaired before it gets here (:mod:`cli.user_text`);
    what remains is a path whose bytes matter, such as a current directory named in another encoding.
    """


class ProfileError(PlatformError):
    """A profile name that is invalid, names no profile, or (to create) one that exists; the CLI exits 2
    with the message."""

    code = "not_found"


class SocketSetupError(PlatformError):
    """The control socket (or its private directory) could not be set up."""


class ProtocolError(PlatformError):
    """The other side sent something the control conversation does not allow."""


class BadFrame(ProtocolError):
    """A client's frame could not be decoded; ``request_id`` is the id it named, when readable."""

    def __init__(self, message: str, request_id: str | None) -> None:
        super().__init__(message)
        self.request_id = request_id


class VersionMismatch(ProtocolError):
    """Client and daemon speak different protocol versions."""


class RequestFailed(PlatformError):
    """The daemon refused a request: ``code`` is an ``ERROR_CODES`` member."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
