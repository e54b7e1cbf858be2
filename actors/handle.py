"""ActorHandle: what others hold of an actor — send, ask, stop, inspect.

A handle never exposes the actor's state; it only puts messages in the
mailbox, asks the actor to stop, and reads its snapshot.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Generic, TypeVar, cast

from actors.errors import MailboxClosed
from actors.mailbox import Envelope, Mailbox, Reply
from messages.request import Request
from messages.supervision import ActorSnapshot

if TYPE_CHECKING:
    from actors.base import ActorBase

__all__ = ["ActorHandle"]

M = TypeVar("M")
#: The type of an ask's reply, named by its request (:class:`~messages.request.Request`).
R = TypeVar("R")


class ActorHandle(Generic[M]):
    """A reference to a live (or finished) member of the tree: an actor, or a job
    (which takes no messages: only ``stop`` and the snapshot apply)."""

    __slots__ = ("_actor",)

    def __init__(self, actor: ActorBase) -> None:
        self._actor = actor

    @property
    def path(self) -> str:
        """The actor's path in the tree, e.g. ``sessions/session:ab12/turn``."""
        return self._actor.path

    @property
    def kind(self) -> str:
        """The actor's kind (``session``, ``tool``, ``supervisor`` ...)."""
        return self._actor.kind

    async def tell(self, message: M) -> None:
        """Send ``message``, waiting while the mailbox is full.

        Raises:
            MailboxClosed: the actor has stopped.
        """
        await self._mailbox().put(message)

    def tell_nowait(self, message: M) -> None:
        """Send ``message`` without waiting.

        Raises:
            MailboxFull: the mailbox is at capacity; nothing was sent.
            MailboxClosed: the actor has stopped.
        """
        self._mailbox().put_nowait(message)

    async def ask(self, message: Request[R]) -> R:
        """Send ``message`` and wait for the actor's reply, of the type its class declares.

        The caller bounds the wait with its own scope (``trio.fail_after``);
        a reply that comes after the caller left is dropped.

        The message must also be one the actor takes (one of ``M``). Python's types cannot say
        "an ``M`` that is a ``Request[R]``" (there is no intersection type), so that half is left to
        the actor, whose ``handle`` refuses what it does not take.

        Raises:
            MailboxClosed: the actor has stopped.
            NoReply: the actor stopped before answering.
            Whatever the actor answered with ``Reply.fail``.
        """
        reply: Reply[R] = Reply(self._actor.path)
        # The cast is the half of the check above that types cannot make (docs/DECISIONS.md#d-typed-ask).
        await self._mailbox().put_promptly(Envelope(cast("M", message), reply))
        return await reply.wait()

    def stop(self, reason: str, *, requested_by: str = "operator") -> None:
        """Ask the actor to stop: its scope is cancelled with ``reason``."""
        self._actor.request_stop(reason, requested_by=requested_by)

    async def wait_stopped(self) -> None:
        """Return once the actor's task has finished (cleanup included)."""
        await self._actor.wait_stopped()

    @property
    def stopped(self) -> bool:
        """True once the actor's task has finished."""
        return self._actor.stopped

    def statistics(self) -> ActorSnapshot:
        """The actor's current snapshot."""
        return self._actor.statistics()

    def _mailbox(self) -> Mailbox[M]:
        mailbox = self._actor.mailbox
        if mailbox is None:
            raise MailboxClosed(self._actor.path, "a job reads no mailbox")
        return mailbox

    def __repr__(self) -> str:
        return f"<ActorHandle {self._actor.kind} {self._actor.path!r}>"
