"""The registry, linked children and the tree snapshot."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from actors.base import Actor
from actors.errors import ActorNotFound
from messages.supervision import ActorState
from supervisor import ChildSpec, RestartType


class Parent(Actor[Any]):
    """Spawns linked children on request."""

    kind = "parent"

    async def handle(self, message: Any) -> Any:
        kind, name = message
        child = Child() if kind == "child" else Exploding()
        return await self.spawn(child, name)


class Child(Actor[Any]):
    """Idle until stopped; shows an activity and a detail."""

    kind = "child"

    async def on_start(self) -> None:
        self.activity = "waiting"

    def snapshot_details(self) -> dict[str, Any]:
        return {"budget": "0/10"}


class Exploding(Actor[Any]):
    """Raises as soon as it runs."""

    kind = "exploding"

    async def main(self) -> None:
        raise KeyError("bad")


class TestTree:
    """Paths, lookup and snapshots of the live tree."""

    async def test_paths_and_tree(self, system) -> None:
        """Children get slash-joined paths, lookup finds them, the tree nests them with details."""
        parent = await system.root.start_child(ChildSpec("sessions", Parent))
        await parent.ask(("child", "session:1"))
        await parent.ask(("child", "session:2"))
        assert system.lookup("sessions/session:2").kind == "child"
        tree = system.tree()
        assert tree.snapshot.kind == "supervisor"
        [sessions] = tree.children
        assert [n.snapshot.path for n in sessions.children] == ["sessions/session:1", "sessions/session:2"]
        node = sessions.children[0].snapshot
        assert node.activity == "waiting" and node.details == {"budget": "0/10"}
        assert node.state is ActorState.IDLE
        assert [s.path for s in system.tree("sessions").walk()] == [
            "sessions", "sessions/session:1", "sessions/session:2"
        ]

    async def test_unknown_path(self, system) -> None:
        """Looking up a path nobody has is a clear error."""
        with pytest.raises(ActorNotFound, match="no such actor"):
            system.lookup("sessions/nope")

    async def test_stopped_child_leaves_registry_and_tree(self, system) -> None:
        """A child that stops disappears from lookup and from its parent's node."""
        parent = await system.root.start_child(ChildSpec("p", Parent))
        child = await parent.ask(("child", "c"))
        child.stop("done")
        await child.wait_stopped()
        assert "p/c" not in system.registry
        assert system.tree("p").children == []


class TestLinkedChildren:
    """A spawned child's failure reaches its parent, boxed."""

    async def test_child_failure_fails_the_parent(self, system, autojump_clock: trio.testing.MockClock) -> None:
        """The parent fails with ActorFailed naming the child, the original as cause."""
        parent = await system.root.start_child(ChildSpec("p", Parent, RestartType.TEMPORARY))
        await parent.ask(("exploding", "x"))  # ready first, fails right after
        await parent.wait_stopped()
        assert parent.statistics().state is ActorState.FAILED
        record = parent.statistics().last_error
        assert record.type == "ActorFailed" and "p/x" in record.message and "KeyError" in record.message
