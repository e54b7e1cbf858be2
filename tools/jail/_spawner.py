"""The long-lived threads that fork every process a tool starts.

bubblewrap's ``--die-with-parent`` is ``PR_SET_PDEATHSIG``, which fires when the *thread* that forked
bwrap exits. Trio forks from its worker threads, and those exit after about ten seconds idle, which
would kill any command running longer. So every ``subprocess.Popen`` runs on one of a few threads whose
life is the launcher's (the daemon's): a daemon killed with ``-9`` takes every jail with it, and a
command never dies of a worker thread's idleness.

Several threads, because a fork is slow when the event loop is busy: ``Popen`` gives up the GIL at each
system call and waits to get it back, so under load one fork took 6-9 ms and commands queued behind
each other (120-360 ms each at 200 busy sessions).

A jail's command line is built on the same thread, just before its fork (``rewrite``): it looks at the
disk, and a hand-off to a worker thread of its own cost the daemon about 60 us of CPU per command.
"""

from __future__ import annotations

import queue
import subprocess
import threading
from collections.abc import Callable, Mapping
from typing import Any

import attrs
import outcome
import trio

__all__ = ["LauncherClosed", "Rewrite", "Spawner"]

Rewrite = Callable[[list[str], Mapping[str, str]], tuple[list[str], dict[str, str]]]
"""Turns a command and its environment into those to start (a jail's bwrap command line); may block."""


class LauncherClosed(RuntimeError):
    """A process was asked of a launcher that is closed (the daemon is shutting down)."""


@attrs.frozen
class _Request:
    """One Popen to run, and where to hand its outcome back."""

    popen: Callable[[], subprocess.Popen[bytes]]
    token: trio.lowlevel.TrioToken
    deliver: Callable[[outcome.Outcome[subprocess.Popen[bytes]]], None]


def _kill_orphan(result: outcome.Outcome[subprocess.Popen[bytes]]) -> None:
    # Nobody is left to take the process: the Trio run it was for has ended.
    if isinstance(result, outcome.Value):
        result.value.kill()
        result.value.wait()


class Spawner:
    """Plain threads fed by one queue; :meth:`popen` runs ``subprocess.Popen`` on whichever is free.

    Args:
        name: The threads' name.
        threads: How many forks may be under way at once.

    # Invariant: after close() nothing is queued any more; each thread exits once the requests
    # queued before have been served.
    """

    def __init__(self, name: str = "hermes-jail-spawner", threads: int = 1) -> None:
        self._requests: queue.SimpleQueue[_Request | None] = queue.SimpleQueue()
        # Daemon threads: an unclosed launcher never holds the interpreter open.
        self._threads = [threading.Thread(target=self._serve, name=name, daemon=True) for _ in range(threads)]
        self._closed = False

    def start(self) -> None:
        """Start the threads."""
        for thread in self._threads:
            thread.start()

    def close(self) -> None:
        """Stop taking requests; the threads end after the queued ones.

        Their exit fires ``PDEATHSIG`` in every jail they started: close only when the tools have stopped.
        """
        if not self._closed:
            self._closed = True
            for _ in self._threads:
                self._requests.put(None)

    async def popen(self, argv: list[str], *, rewrite: Rewrite | None = None, **options: Any) -> subprocess.Popen[bytes]:
        """``subprocess.Popen(argv, **options)`` on a spawn thread.

        The wait is shielded: once queued, the fork happens and its process is returned, so the
        caller can stop it if it was cancelled meanwhile.

        Args:
            argv: The command.
            rewrite: Run on the spawn thread first, with ``argv`` and ``options["env"]``: what it returns
                is started instead. Its exceptions are raised here, and nothing is started.
            options: ``subprocess.Popen``'s keyword arguments.

        Raises:
            LauncherClosed: the launcher was closed.
            OSError: what Popen raised.
            Exception: what ``rewrite`` raised.
        """
        if self._closed:
            raise LauncherClosed("the launcher is closed: the daemon is shutting down")
        done = trio.Event()
        box: list[outcome.Outcome[subprocess.Popen[bytes]]] = []

        def deliver(result: outcome.Outcome[subprocess.Popen[bytes]]) -> None:
            box.append(result)
            done.set()

        def start() -> subprocess.Popen[bytes]:
            if rewrite is None:
                return subprocess.Popen(argv, **options)
            command, env = rewrite(argv, options.get("env") or {})
            return subprocess.Popen(command, **{**options, "env": env})

        request = _Request(start, trio.lowlevel.current_trio_token(), deliver)
        self._requests.put(request)
        with trio.CancelScope(shield=True):
            await done.wait()
        return box[0].unwrap()

    def _serve(self) -> None:
        while (request := self._requests.get()) is not None:
            result = outcome.capture(request.popen)
            try:
                request.token.run_sync_soon(request.deliver, result)
            except trio.RunFinishedError:
                _kill_orphan(result)
