"""The daemon in process: its shutdown bound and watchdog, and a restarted sessions supervisor."""

from __future__ import annotations

import tempfile
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio

from actors import Actor
from supervisor import ActorSystem
from control.client import ControlClient
from actors.platform.daemon import WATCHDOG_GRACE_SECONDS, serve_daemon
from control.paths import DaemonPaths
from config.loader import load_config
from messages import control as c
from messages.paths import session_path
from messages.supervision import ActorState
from supervisor import ChildSpec

#: How long the stubborn actor's cleanup holds out (shielded), well past the bound.
STUBBORN_SECONDS = 3.5


class Stubborn(Actor[None]):
    """An actor whose cleanup ignores cancellation for a while, as a wedged one would."""

    kind = "stubborn"
    shutdown_timeout = 30.0

    async def main(self) -> None:
        self.state = ActorState.RUNNING
        await trio.sleep_forever()

    async def on_stop(self) -> None:
        with trio.CancelScope(shield=True):
            await trio.sleep(STUBBORN_SECONDS)


def _stop_through_socket(paths: DaemonPaths) -> None:
    with ControlClient.connect(paths) as client:
        client.request(c.StopDaemon(client.next_id()))


class TestShutdownBound:
    """A stop that overruns shutdown_timeout_seconds is cut short and the watchdog is called."""

    async def test_watchdog_fires_past_the_bound(self) -> None:
        """With a 0.5 s bound and a 3.5 s cleanup, the watchdog fires; the socket is removed at the end."""
        with tempfile.TemporaryDirectory(prefix="ha-") as base:
            home = Path(base) / "home"
            home.mkdir(mode=0o700)
            (home / "config.yaml").write_text("daemon:\n  shutdown_timeout_seconds: 0.5\n")
            paths = DaemonPaths(home)
            fired = threading.Event()
            fired_at: list[float] = []

            def on_overrun() -> None:
                fired_at.append(time.monotonic())
                fired.set()

            async def daemon(task_status: trio.TaskStatus[object]) -> None:
                await serve_daemon(paths, load_config(home), on_overrun=on_overrun, task_status=task_status)

            async with trio.open_nursery() as nursery:
                system = await nursery.start(daemon)
                await system.root.start_child(ChildSpec("stubborn", Stubborn, shutdown_timeout=30.0))
                started = trio.current_time()
                await trio.to_thread.run_sync(_stop_through_socket, paths)
            returned_at = time.monotonic()
            assert fired.is_set(), "the watchdog did not fire"
            # It fired while the stubborn cleanup still held the daemon up, not after.
            assert fired_at[0] < returned_at - 0.5
            assert trio.current_time() - started >= STUBBORN_SECONDS - 0.2
            assert not paths.socket.exists()

    async def test_quick_stop_stands_the_watchdog_down(self) -> None:
        """A stop within the bound never calls the watchdog, even after its time has passed."""
        with tempfile.TemporaryDirectory(prefix="ha-") as base:
            home = Path(base) / "home"
            home.mkdir(mode=0o700)
            (home / "config.yaml").write_text("daemon:\n  shutdown_timeout_seconds: 0.2\n")
            paths = DaemonPaths(home)
            fired = threading.Event()

            async def daemon(task_status: trio.TaskStatus[object]) -> None:
                await serve_daemon(paths, load_config(home), on_overrun=fired.set, task_status=task_status)

            async with trio.open_nursery() as nursery:
                await nursery.start(daemon)
                await trio.to_thread.run_sync(_stop_through_socket, paths)
            await trio.to_thread.run_sync(time.sleep, 0.2 + WATCHDOG_GRACE_SECONDS + 0.3)
            assert not fired.is_set()


@asynccontextmanager
async def _serving() -> AsyncIterator[tuple[ActorSystem, DaemonPaths, str]]:
    """A daemon served in this process in a fresh home: its system, its paths and a working directory.

    The daemon is stopped through its socket when the block ends.
    """
    with tempfile.TemporaryDirectory(prefix="ha-") as base:
        home = Path(base) / "home"
        home.mkdir(mode=0o700)
        paths = DaemonPaths(home)

        async def daemon(task_status: trio.TaskStatus[ActorSystem]) -> None:
            await serve_daemon(paths, load_config(home), task_status=task_status)

        async with trio.open_nursery() as nursery:
            system = await nursery.start(daemon)
            yield system, paths, base
            await trio.to_thread.run_sync(_stop_through_socket, paths)


class TestSessionsRestart:
    """If the root restarts ``sessions``, the control service follows the new instance."""

    async def test_sessions_supervisor_replaced(self) -> None:
        """After the sessions supervisor is stopped and restarted, new sessions still start."""
        async with _serving() as (system, paths, base):

            def create() -> str:
                with ControlClient.connect(paths) as client:
                    return client.request(c.CreateSession(client.next_id(), cwd=base, provider="custom")).session_id

            first = await trio.to_thread.run_sync(create)
            old = system.lookup("sessions")
            old.stop("test: replace the sessions supervisor", requested_by="test")
            await old.wait_stopped()
            while "sessions" not in system.registry or system.lookup("sessions") is old:
                await trio.sleep(0.01)
            second = await trio.to_thread.run_sync(create)
            assert second != first
            assert session_path(second) in system.registry


class TestSharedOwnersNotRestarted:
    """The owners of what every session holds are never restarted: closed, it cannot be handed back."""

    @pytest.mark.parametrize("owner", ["providers", "store"])
    async def test_stopped_owner_stays_stopped(self, owner: str) -> None:
        """Stopping it closes what it owns; the root starts no new instance and the rest of the tree stays up."""
        async with _serving() as (system, _, _):
            handle = system.lookup(owner)
            handle.stop(f"test: stop {owner}", requested_by="test")
            await handle.wait_stopped()
            await trio.testing.wait_all_tasks_blocked()
            assert owner not in system.registry
            assert owner not in [child.name for child in await system.root.which_children()]
            assert {"store", "providers", "sessions", "control"} - {owner} <= set(system.registry.paths())
            if owner == "providers":
                assert handle.statistics().details["state"] == "closed"
