"""``hosts/host:<n>``: the front's actor for one session-host process (``daemon.hosts``).

Starting it starts the process (``python -m actors.platform.daemon.cluster.hosts <n>``, in a session of its
own so a terminal's Ctrl-C reaches only the front) and waits for it to serve; then it reads the
shared request link until the process ends. A host that exits, or closes its link, fails this actor,
and the ``hosts`` supervisor starts a new one: its sessions wake from the store on their next request.
Stopping it closes the host's standard input, which stops the host gracefully (its turns interrupted
and committed); past the daemon's shutdown bound the host's process group is killed.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
from collections.abc import Mapping
from typing import Any

import trio

from actors import Actor
from actors.platform.daemon.cluster.hosts.link import HostLink, open_host_stream
from actors.platform.daemon.cluster.hosts.paths import HostPaths
from actors.platform.daemon.cluster.hosts.process import READY_LINE
from actors.platform.daemon.cluster.hosts.placement import HostRouter
from control.paths import HOME_VARIABLE
from messages.supervision import ActorState

__all__ = ["HostActor", "HostExited", "HostStartFailed"]

log = logging.getLogger("hermes_actors.hosts")

#: How long a host may take to start serving (it imports every SDK and opens the store).
START_SECONDS = 60.0
#: Past a graceful stop's bound, how long the killed process group has to be reaped.
KILL_GRACE_SECONDS = 5.0


class HostStartFailed(Exception):
    """A host process did not come up."""


class HostExited(Exception):
    """A running host process ended, or closed its link, without being asked to."""


class HostActor(Actor[None]):
    """One session-host process and the front's shared link to it.

    Args:
        paths: the host's files (its index and socket).
        router: told when the host serves and when it stops.
        environ: the process's environment (the daemon's own, with its home).
        stop_seconds: the host's graceful stop bound (``daemon.shutdown_timeout_seconds``).
    """

    kind = "host"

    def __init__(self, paths: HostPaths, router: HostRouter, environ: Mapping[str, str], stop_seconds: float) -> None:
        super().__init__()
        self._paths = paths
        self._router = router
        self._environ = {**environ, HOME_VARIABLE: str(paths.home)}
        self._stop_seconds = stop_seconds
        self.shutdown_timeout = stop_seconds + 2 * KILL_GRACE_SECONDS
        self._process: trio.Process | None = None
        self._link: HostLink | None = None

    def snapshot_details(self) -> dict[str, Any]:
        process, link = self._process, self._link
        return {
            "pid": process.pid if process is not None else None,
            "socket": str(self._paths.socket),
            "placed_sessions": self._router.loads().get(self._paths.index, 0),
            "requests": link.requests if link is not None else 0,
        }

    async def on_start(self) -> None:
        # Not waited for here: the hosts start side by side, and a request meanwhile waits for one.
        self._router.starting(self._paths.index)
        try:
            self._process = await trio.lowlevel.open_process(
                [sys.executable, "-m", "actors.platform.daemon.cluster.hosts", str(self._paths.index)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=self._environ, start_new_session=True,
            )
        except BaseException:
            self._router.down(self._paths.index)
            raise

    async def _wait_ready(self, process: trio.Process) -> None:
        assert process.stdout is not None
        seen = b""
        with trio.move_on_after(START_SECONDS):
            while not seen.endswith(READY_LINE):
                chunk = await process.stdout.receive_some(64)
                if not chunk:
                    code = await process.wait()
                    raise HostStartFailed(f"{self.path} exited with status {code} before serving (see the log)")
                seen = (seen + chunk)[-len(READY_LINE):]
            # Nothing more is read: a host's later writes to its standard output are dropped, never blocking it.
            await process.stdout.aclose()
            return
        raise HostStartFailed(f"{self.path} did not serve within {START_SECONDS:g} s")

    async def main(self) -> None:
        assert self._process is not None
        process = self._process
        self.activity = "starting"
        await self._wait_ready(process)
        stream, reader = await open_host_stream(self._paths.socket, self._router.encoder, self._router.decoder)
        self._link = link = HostLink(stream, reader, self._router.encoder, self._router.decoder, self.path)
        self._router.up(self._paths.index, self._paths.socket, link)
        self.state = ActorState.RUNNING
        self.activity = ""
        log.info("%s serving (pid %d)", self.path, process.pid)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._serve_link, link, process)
            code = await process.wait()
            nursery.cancel_scope.cancel()
        raise HostExited(f"{self.path} (pid {process.pid}) exited with status {code}")

    async def _serve_link(self, link: HostLink, process: trio.Process) -> None:
        """Serve the shared link; a host that closes it while it lives is failed (and restarted) too."""
        await link.serve()
        with trio.move_on_after(KILL_GRACE_SECONDS):
            await process.wait()  # an exiting host closes its link first: report its exit instead
        raise HostExited(f"{self.path} (pid {process.pid}) closed its link")

    async def on_stop(self) -> None:
        self._router.down(self._paths.index)
        if self._link is not None:
            self._link.close(f"{self.path} is stopping")
        await self._end_process()

    async def _end_process(self) -> None:
        """Ask the host to stop (its standard input ends), and kill its process group past the bound."""
        process = self._process
        if process is None or process.returncode is not None:
            return
        assert process.stdin is not None
        await process.stdin.aclose()
        with trio.move_on_after(self._stop_seconds + KILL_GRACE_SECONDS):
            await process.wait()
            return
        log.error("%s did not stop within %.1f s; killing it", self.path, self._stop_seconds + KILL_GRACE_SECONDS)
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        with trio.move_on_after(KILL_GRACE_SECONDS):
            await process.wait()
