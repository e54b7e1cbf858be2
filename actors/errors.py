"""The runtime's exceptions.

::

    Rejected(Exception)        raised by a handler: answer the asker with an error, keep running
    ActorError(RuntimeError)
    ├── MailboxFull            tell_nowait found the mailbox at capacity
    ├── MailboxClosed          the actor is gone; nothing more can be sent to it
    ├── NoReply                the actor stopped before answering an ask
    ├── ActorNotFound          no live actor at that path (also a LookupError)
    ├── SpawnFailed            the child raised before it was ready
    ├── JobStopped             a job was interrupted and has no value for that case
    └── ActorFailed            an actor raised; the original is ``__cause__``
        └── RestartIntensityExceeded   a supervisor gave up and escalates

A job's own errors are not boxed: ``run_job`` raises them as they were raised.
"""

from __future__ import annotations

__all__ = [
    "ActorError",
    "ActorFailed",
    "ActorNotFound",
    "JobStopped",
    "MailboxClosed",
    "MailboxFull",
    "NoReply",
    "Rejected",
    "RestartIntensityExceeded",
    "SpawnFailed",
]


class ActorError(RuntimeError):
    """Base of every runtime error; ``path`` names the actor concerned."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path or 'supervisor'}: {message}")
        self.path = path


class MailboxFull(ActorError):
    """``tell_nowait`` found the mailbox full; the message was not sent."""


class MailboxClosed(ActorError):
    """The actor has stopped; its mailbox takes nothing more."""


class NoReply(ActorError):
    """The actor stopped (or dropped the request) before replying to an ask."""


class ActorNotFound(ActorError, LookupError):
    """No live actor has that path."""


class SpawnFailed(ActorError):
    """A child raised before it reported ready; the error is ``__cause__``."""


class ActorFailed(ActorError):
    """An actor's loop raised. The original exception is ``__cause__``.

    This is the box a failure crosses an actor boundary in: the parent sees
    which actor failed and, through ``__cause__``, why.
    """


class JobStopped(ActorError):
    """A job was interrupted (``kill PATH``, its parent's ``request_stop``) before it
    returned, and its kind has no interrupted value; the reason is in the message."""


class RestartIntensityExceeded(ActorFailed):
    """A supervisor restarted its children too often and gives up, escalating
    to its own parent."""


class Rejected(Exception):
    """Raised by an actor's ``handle`` to refuse one request without failing.

    The asker receives ``error`` (a ``tell`` sender gets nothing; the refusal
    is logged); the actor goes on reading its mailbox.
    """

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error
