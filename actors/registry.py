"""The registry of live actors by path, owned by the root of one actor system."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from actors.errors import ActorError, ActorNotFound
from messages.supervision import TreeNode

if TYPE_CHECKING:
    from actors.base import ActorBase
    from actors.handle import ActorHandle

__all__ = ["ActorRegistry"]


class ActorRegistry:
    """Every live actor of one system, by path. The runtime adds an actor when
    it starts and removes it when its task ends; nobody else writes here."""

    __slots__ = ("_actors",)

    def __init__(self) -> None:
        self._actors: dict[str, ActorBase] = {}

    def __len__(self) -> int:
        return len(self._actors)

    def __contains__(self, path: str) -> bool:
        return path in self._actors

    def paths(self) -> list[str]:
        """Every registered path, in registration order."""
        return list(self._actors)

    def add(self, actor: ActorBase) -> None:
        """Register ``actor`` under its path.

        Raises:
            ActorError: another live actor already has that path.
        """
        if actor.path in self._actors:
            raise ActorError(actor.path, "an actor with this path is already running")
        self._actors[actor.path] = actor

    def remove(self, actor: ActorBase) -> None:
        """Forget ``actor`` (only if it is the one registered at its path)."""
        if self._actors.get(actor.path) is actor:
            del self._actors[actor.path]

    def lookup(self, path: str) -> ActorHandle[Any]:
        """The handle of the live actor at ``path``.

        Raises:
            ActorNotFound: nothing is running there.
        """
        actor = self._actors.get(path)
        if actor is None:
            raise ActorNotFound(path, "no such actor")
        return actor.ref

    def tree(self, path: str = "") -> TreeNode:
        """A snapshot of the subtree at ``path`` (the whole system by default).

        Built in one synchronous pass, so no actor changes while it is taken.

        Raises:
            ActorNotFound: nothing is running at ``path``.
        """
        root = self._actors.get(path)
        if root is None:
            raise ActorNotFound(path, "no such actor")
        return _node(root)


def _node(actor: ActorBase) -> TreeNode:
    return TreeNode(actor.statistics(), [_node(child) for child in actor.children()])
