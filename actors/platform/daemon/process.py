"""``hermes-actors daemon``: the daemon process, from lock to exit.

The process takes the instance lock, logs one redacted line per event to
stderr (or ``logs/daemon.log`` when started in the background), prepares the
runtime directory every session's temp and sandbox directories live in
(emptied of earlier runs' leftovers once the instance lock is held), and runs
the actor tree that :mod:`actors.platform.daemon.wiring` builds.

SIGTERM or SIGINT (or ``hermes-actors stop``) stops the tree in reverse start
order: the control socket is closed and removed, sessions interrupt their
turns and commit, the clients close, the store commits what is queued. That is bounded by
``daemon.shutdown_timeout_seconds``; past it the tree is cancelled outright,
and a watchdog thread ends the process a little later whatever still runs.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import trio

from actors import ActorError
from actors.platform.daemon.collector import freeze_startup_heap, tune_collector
from actors.platform.daemon.control.socket_file import remove_control_socket
from actors.platform.daemon.limits import raise_open_file_limit
from actors.platform.daemon.logs import configure_logging, install_safe_stdio
from control.errors import EXIT_ALREADY_RUNNING, EXIT_FAILURE, EXIT_NOT_FOUND, PlatformError
from control.lock import InstanceLock
from control.paths import DaemonPaths, ensure_private_dir
from config.loader import Config, ConfigError, load_config
from store.errors import StoreError
from tools.jail.runtime import RuntimeDir

__all__ = ["run_daemon", "serve_daemon"]

log = logging.getLogger("hermes_actors.daemon")

#: How long past the shutdown bound the watchdog waits before ending the process.
WATCHDOG_GRACE_SECONDS = 2.0


class _Shutdown:
    """Who asked the daemon to stop, and the cancel scope bounding how long that may take."""

    def __init__(self, timeout: float, on_overrun: Callable[[], None]) -> None:
        self.timeout = timeout
        self.requested = trio.Event()
        self.reason = ""
        self.scope = trio.CancelScope()
        self._on_overrun = on_overrun
        self._watchdog: threading.Timer | None = None

    def request(self, reason: str) -> None:
        """Begin a graceful stop (a second request cancels at once)."""
        if self.requested.is_set():
            log.warning("second stop request (%s): cancelling everything now", reason)
            self.scope.cancel(reason=reason)
            return
        log.info("stopping: %s (bounded by %.1f s)", reason, self.timeout)
        self.reason = reason
        self.requested.set()
        self.scope.deadline = trio.current_time() + self.timeout
        self._watchdog = threading.Timer(self.timeout + WATCHDOG_GRACE_SECONDS, self._on_overrun)
        self._watchdog.daemon = True
        self._watchdog.start()

    def finished(self) -> None:
        """The stop is complete: the watchdog stands down."""
        if self._watchdog is not None:
            self._watchdog.cancel()


async def _watch_signals(shutdown: _Shutdown) -> None:
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for signum in signals:
            shutdown.request(f"received {signal.Signals(signum).name}")


async def _watch_front(shutdown: _Shutdown) -> None:
    """A host process stops when its front goes away (its standard input, a pipe from the front, ends),
    ``kill -9`` of the front included."""
    stdin = trio.lowlevel.FdStream(os.dup(0))
    async with stdin:
        while await stdin.receive_some(4096):
            pass
    shutdown.request("the daemon's front went away")


async def serve_daemon(
    paths: DaemonPaths,
    config: Config,
    *,
    host_index: int | None = None,
    on_overrun: Callable[[], None] | None = None,
    on_ready: Callable[[], None] = lambda: None,
    task_status: trio.TaskStatus[Any] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Run the daemon's actor tree until it is asked to stop; reports ``started`` once serving.

    ``on_ready`` runs once the tree serves (the daemon process freezes its start-up heap there).
    ``host_index`` makes this a session-host process of a front (``actors.platform.daemon.cluster.hosts``):
    it stops when its standard input ends, and leaves the runtime directory, shared with the front
    and the other hosts, to the front.
    """
    # Imported here, not at the top: a second daemon refused by the instance lock must not pay
    # the second it takes to import the whole tree (every provider SDK) first.
    from actors.platform.daemon.wiring import open_daemon_tree

    section = config.daemon
    shutdown = _Shutdown(section.shutdown_timeout_seconds, on_overrun or (lambda: None))
    runtime = await trio.to_thread.run_sync(_runtime_of, paths, host_index is None)
    await trio.to_thread.run_sync(runtime.prepare)
    if host_index is None:
        # Every session's /tmp in memory, where the daemon may mount (sandbox.limits.tmp_mb).
        await trio.to_thread.run_sync(runtime.hold_in_memory, config.sandbox.limits.tmp_mb)
    try:
        async with trio.open_nursery() as signals:
            signals.start_soon(_watch_signals, shutdown)
            if host_index is not None:
                signals.start_soon(_watch_front, shutdown)
            with shutdown.scope:
                async with open_daemon_tree(paths, config, runtime, shutdown.request, host_index=host_index) as system:
                    log.info("daemon ready (pid %d, home %s)", os.getpid(), paths.home)
                    on_ready()
                    task_status.started(system)
                    await shutdown.requested.wait()
            if shutdown.scope.cancelled_caught:
                log.error("shutdown exceeded %.1f s; the rest was cancelled", section.shutdown_timeout_seconds)
            signals.cancel_scope.cancel()
        shutdown.finished()
        remove_control_socket(paths)
    finally:
        # The tree and the launcher are gone, so no jail runs: nothing of this run need stay.
        if host_index is None:
            with trio.CancelScope(shield=True):
                await trio.to_thread.run_sync(runtime.remove)
    log.info("daemon stopped")


def _runtime_of(paths: DaemonPaths, claim: bool) -> RuntimeDir:
    """The daemon's runtime directory: in the per-user directory it claims (and records), or, for a host,
    in the one its front recorded."""
    if not claim:
        return RuntimeDir.for_home(paths.home, paths.user_dir)
    ensure_private_dir(paths.run_dir)
    return RuntimeDir.claim(paths.home, paths.user_dir_record)


def _leaves(group: BaseExceptionGroup[BaseException]) -> list[BaseException]:
    out: list[BaseException] = []
    for exc in group.exceptions:
        out.extend(_leaves(exc) if isinstance(exc, BaseExceptionGroup) else [exc])
    return out


def run_daemon(home: Path) -> int:
    """The ``hermes-actors daemon`` command: run in the foreground until stopped; the exit status."""
    install_safe_stdio()
    tune_collector()
    configure_logging(sys.stderr)
    raise_open_file_limit()
    paths = DaemonPaths(home)
    try:
        ensure_private_dir(paths.home)
        ensure_private_dir(paths.run_dir)
        config = load_config(paths.home)
    except (ConfigError, OSError) as exc:
        log.error("cannot start: %s", exc)
        return EXIT_NOT_FOUND
    lock = InstanceLock(paths.lock_file, paths.home)
    try:
        lock.take()
    except PlatformError as exc:
        log.error("%s", exc)
        return EXIT_ALREADY_RUNNING
    try:
        # Only now: with the lock held no other daemon of this home can be using what is removed.
        left = _runtime_of(paths, claim=True).clean()
    except OSError as exc:
        log.error("cannot start: %s", exc)
        lock.release()
        return EXIT_FAILURE
    if left:
        log.info("removed %d leftovers of an earlier run from the runtime directory", len(left))

    def overrun() -> None:
        # Trio could not unwind (a thread that will not return): leave anyway, tidily.
        log.error("shutdown did not finish in time; exiting now")
        remove_control_socket(paths)
        os._exit(1)

    status = 0
    try:
        trio.run(lambda: serve_daemon(paths, config, on_overrun=overrun, on_ready=freeze_startup_heap))
    except* (PlatformError, StoreError, ActorError) as group:
        for error in _leaves(group):
            log.error("daemon failed: %s", error)
        status = EXIT_FAILURE
    finally:
        lock.release()
    return status
