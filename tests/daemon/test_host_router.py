"""The front's placement of sessions on its hosts, and how host paths read at the front (no processes here)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

from actors.platform.daemon.cluster.hosts.link import HostUnavailable
from actors.platform.daemon.cluster.hosts.placement import HostRouter, relocate, split_host_path
from messages import control as c
from messages.codec import Codec
from messages.supervision import ActorSnapshot, ActorState, TreeNode

START_SECONDS = 60.0


def _router() -> HostRouter:
    return HostRouter(Codec(c.ClientMessage), Codec(c.DaemonMessage), START_SECONDS)


def _up(router: HostRouter, index: int) -> None:
    link: Any = object()  # placement never touches a host's link
    router.up(index, Path(f"/nowhere/host-{index}.sock"), link)


class TestPlacement:
    """Least-loaded first, creations in flight counted, a stopped host's sessions placed afresh."""

    async def test_least_loaded_and_sticky(self) -> None:
        router = _router()
        _up(router, 1)
        _up(router, 2)
        first, second, third = await router.place("a"), await router.place("b"), await router.place("c")
        assert (first, second, third) == (1, 2, 1)
        assert router.loads() == {1: 2, 2: 1}
        assert router.host_of("b") == 2
        router.down(2)
        assert router.host_of("b") is None and router.running() == [1]
        router.forget("a")
        assert router.loads() == {1: 1}

    async def test_a_failed_creation_is_not_counted(self) -> None:
        router = _router()
        _up(router, 1)
        index = await router.place()
        router.unplace(index)
        assert router.loads() == {1: 0}

    async def test_a_request_waits_for_a_starting_host(self, autojump_clock: trio.abc.Clock) -> None:
        router = _router()
        router.starting(1)

        async def comes_up() -> None:
            await trio.sleep(5)
            _up(router, 1)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(comes_up)
            began = trio.current_time()
            assert await router.place("a") == 1
            assert trio.current_time() - began == pytest.approx(5)

    async def test_no_host_starting_fails_at_once(self, autojump_clock: trio.abc.Clock) -> None:
        router = _router()
        began = trio.current_time()
        with pytest.raises(HostUnavailable):
            await router.place("a")
        assert trio.current_time() == began

    async def test_a_host_that_never_comes_fails_after_the_bound(self, autojump_clock: trio.abc.Clock) -> None:
        router = _router()
        router.starting(1)
        began = trio.current_time()
        with pytest.raises(HostUnavailable, match="no session host"):
            await router.place("a")
        assert trio.current_time() - began == pytest.approx(START_SECONDS)


class TestPaths:
    """``hosts/host:<n>/...`` splits into the host and its own path; a host's tree gets the prefix and the front's clock."""

    @pytest.mark.parametrize(("path", "split"), [
        ("hosts/host:2/sessions/session:ab", (2, "sessions/session:ab")),
        ("/hosts/host:1/", (1, "")),
        ("hosts/host:x/store", None),
        ("sessions/session:ab", None),
        ("hosts", None),
    ])
    def test_split(self, path: str, split: tuple[int, str] | None) -> None:
        assert split_host_path(path) == split

    def test_relocate(self) -> None:
        def node(path: str, *children: TreeNode) -> TreeNode:
            snapshot = ActorSnapshot(path=path, kind="k", state=ActorState.RUNNING, activity="", mailbox_used=0,
                                     mailbox_capacity=1, restarts=0, started_at=10.0)
            return TreeNode(snapshot, list(children))

        moved = relocate(node("sessions", node("sessions/session:ab")), 2, 100.0)
        assert [s.path for s in moved.walk()] == ["hosts/host:2/sessions", "hosts/host:2/sessions/session:ab"]
        assert {s.started_at for s in moved.walk()} == {110.0}
