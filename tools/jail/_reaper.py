"""A thread of the launcher's that reaps the jails that end by themselves while nobody waits for them.

A session's resident shell ends on its own after its idle time (see :mod:`tools.jail.resident`): its init
exits, then its outer bwrap, a child of ours. No task waits for it then (a session that sits idle has
none), so without this its exit status would wait in the process table until the session's next command or
its end. One thread for every resident: it polls a pidfd of each and reaps whichever exits. Its life is the
launcher's, as the spawn threads' is.
"""

from __future__ import annotations

import os
import select
import threading
from collections.abc import Callable

__all__ = ["Reaper"]


class Reaper:
    """Reaps each watched process once it exits; a daemon thread started by :meth:`start`."""

    def __init__(self) -> None:
        self._wake_read, self._wake_write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._pending: list[tuple[int, Callable[[], object]]] = []
        self._lock = threading.Lock()
        self._closed = False
        self._started = False
        self._thread = threading.Thread(target=self._serve, name="hermes-jail-reaper", daemon=True)

    def start(self) -> None:
        """Start the thread."""
        with self._lock:
            if not self._closed:
                self._started = True
                self._thread.start()

    def watch(self, pid: int, reap: Callable[[], object]) -> None:
        """Call ``reap`` (a ``Popen.wait``: it must not block once the process exited) on the thread once
        ``pid`` (a child of ours, not reaped yet) has exited. Nothing is done after :meth:`close`.

        Raises:
            OSError: no pidfd could be opened for it.
        """
        pidfd = os.pidfd_open(pid)
        # The wake pipe is written only under the lock, while open: the thread closes it under the lock.
        with self._lock:
            if self._closed:
                os.close(pidfd)
                return
            self._pending.append((pidfd, reap))
            os.write(self._wake_write, b"1")

    def close(self) -> None:
        """Stop the thread (what it watches is then reaped by its owner)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._started:
                os.write(self._wake_write, b"1")
                return
            for fd, _ in self._pending:
                os.close(fd)
            os.close(self._wake_read)
            os.close(self._wake_write)

    def _serve(self) -> None:
        poller = select.poll()
        poller.register(self._wake_read, select.POLLIN)
        watched: dict[int, Callable[[], object]] = {}
        while True:
            for fd, _ in poller.poll():
                if fd != self._wake_read:
                    poller.unregister(fd)
                    watched.pop(fd)()
                    os.close(fd)
                    continue
                try:
                    os.read(self._wake_read, 4096)
                except BlockingIOError:
                    pass
                with self._lock:
                    pending, self._pending = self._pending, []
                    if self._closed:
                        for pidfd in [*watched, *(fd for fd, _ in pending)]:
                            os.close(pidfd)
                        os.close(self._wake_read)
                        os.close(self._wake_write)
                        return
                for pidfd, reap in pending:
                    watched[pidfd] = reap
                    poller.register(pidfd, select.POLLIN)
