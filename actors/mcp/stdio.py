"""The stdio transport for MCP servers, on the project's process launcher instead of the SDK's.

The SDK's ``stdio_client`` forks through Trio's ``open_process``, from a worker thread that exits
after some idle seconds, and leaves no way to tie the server's life to the daemon's. Here:

- in a daemon, the server starts through the daemon's launcher, like every tool's process: in a PID
  namespace of its own that dies with the daemon (so ``kill -9`` of the daemon leaves none of what an
  ``npx`` or ``uvx`` server started), under the limits of ``sandbox.limits``, and out of sight of the
  daemon's home, runtime directory and control socket, or jailed like a session (``sandbox``);
- without a daemon (``mcp test``) or where no jail can run, it is forked from one long-lived
  :class:`~tools.jail._spawner.Spawner`, through a tiny exec wrapper that sets ``PR_SET_PDEATHSIG``
  to SIGKILL before it becomes the server;
- its environment is built, never inherited: the allow-list of safe variables (docs/DECISIONS.md#d-env-allow-list)
  (:func:`~tools.jail.environment.allowed_environment`) plus the entry's ``env``;
- it runs in its own process group, stopped as a group (SIGTERM, then SIGKILL after a grace);
- its stderr is drained (a full pipe would block it) and its last lines kept, so an error that
  ends the connection can say what the server said as it died.

:func:`open_stdio` yields the two anyio streams ``mcp.ClientSession`` takes, and a
:class:`StdioServer` that tells when the process has exited and how.
"""

from __future__ import annotations

import collections
import hashlib
import logging
import os
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import anyio
import mcp_types as types
import trio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage

from config.mcp import McpServerConfig
from tools.jail._spawner import Spawner
from tools.jail.environment import allowed_environment
from tools.jail.launcher import start_process
from tools.jail.policy import SandboxMode
from tools.jail.process import JailedProcess

if TYPE_CHECKING:
    from tools.jail.runtime import DaemonJails

__all__ = ["STDERR_LINES", "StdioServer", "open_stdio"]

log = logging.getLogger("hermes_actors.mcp")

#: Lines of a server's stderr kept for its error messages.
STDERR_LINES = 20
#: How long a server may take to exit once its stdin is closed (the MCP spec's polite stop).
_EXIT_GRACE = 0.5
#: Then SIGTERM to its group, and SIGKILL this much later.
_KILL_GRACE = 1.0
_READ_SIZE = 65536
_PR_SET_PDEATHSIG = 1

# Runs as ``python -I -S -c WRAPPER command args...``: asks for SIGKILL when its parent (the spawn
# thread, so the daemon) goes, then becomes the server (the setting survives exec). -I -S keep it
# about 10 ms and free of the user's site-packages.
_WRAPPER = (
    "import ctypes, os, sys\n"
    "ctypes.CDLL(None, use_errno=True).prctl(%d, 9)\n"
    "if os.getppid() != int(sys.argv[1]): os._exit(1)\n"
    "try: os.execvp(sys.argv[2], sys.argv[2:])\n"
    "except OSError as e: sys.stderr.write(f'{sys.argv[2]}: {e.strerror}\\n'); os._exit(127)\n"
) % _PR_SET_PDEATHSIG


class StdioServer:
    """What the transport knows of the server's process.

    Attributes:
        pid: the server's pid (the leader of its process group).
        exited: set once the process has exited.
        returncode: its exit status once exited (negative: killed by that signal).
        stderr_tail: its last lines of stderr.
    """

    def __init__(self, process: JailedProcess) -> None:
        self.process = process
        self.pid = process.pid
        self.exited = trio.Event()
        self.returncode: int | None = None
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=STDERR_LINES)

    def describe_exit(self) -> str:
        """``exited with status 3`` / ``was killed by signal 9`` / ``is running``, and its last stderr line."""
        code = self.returncode
        if code is None:
            what = "is running"
        elif code < 0:
            what = f"was killed by signal {-code}"
        else:
            what = f"exited with status {code}"
        last = next((line for line in reversed(self.stderr_tail) if line.strip()), "")
        return f"{what}; its last stderr line: {last.strip()[:300]}" if last else what


def server_environment(config: McpServerConfig, environ: Mapping[str, str]) -> dict[str, str]:
    """A stdio server's whole environment: the safe variables of ``environ``, then the entry's ``env``."""
    return {**allowed_environment(environ), **config.env}


def _runtime_id(name: str) -> str:
    """A runtime directory's id for server ``name`` (ids are short and plain; names need not be)."""
    return "mcp" + hashlib.sha256(name.encode()).hexdigest()[:12]


@asynccontextmanager
async def _started(
    config: McpServerConfig, spawner: Spawner, jails: DaemonJails | None, environ: Mapping[str, str]
) -> AsyncIterator[JailedProcess]:
    """The server's process: through the daemon's launcher when it can jail, else the PDEATHSIG wrapper."""
    assert config.command is not None
    cwd = config.working_directory or os.path.expanduser("~")
    env = server_environment(config, environ)
    launcher = None if jails is None else jails.launcher
    if jails is None or launcher is None or not launcher.status.available:
        argv = [sys.executable, "-I", "-S", "-c", _WRAPPER, str(os.getpid()), config.command, *config.args]
        yield await start_process(spawner.popen, argv, env, jailed=False, stdin=True, merge_stderr=False, cwd=cwd)
        return
    mode = SandboxMode(config.sandbox or SandboxMode.FULL_ACCESS.value)
    runtime = await jails.open_session(_runtime_id(config.name), mode, cwd)
    try:
        yield await runtime.jail.spawn([config.command, *config.args], cwd=cwd, env=env, stdin=True)
    finally:
        with trio.CancelScope(shield=True):
            await jails.close_session(runtime)


@asynccontextmanager
async def open_stdio(
    config: McpServerConfig, spawner: Spawner, environ: Mapping[str, str], jails: DaemonJails | None = None
) -> AsyncIterator[tuple[anyio.abc.ObjectReceiveStream[SessionMessage | Exception], anyio.abc.ObjectSendStream[SessionMessage], StdioServer]]:
    """Start ``config``'s server and yield ``(read stream, write stream, server)``; leaving stops it.

    Args:
        config: The server's entry.
        spawner: Where it is forked without a daemon's launcher.
        environ: The daemon's environment (the server gets its safe part).
        jails: The daemon's jails: the server starts through their launcher (see the module's docstring).

    Raises:
        OSError: the program or the working directory does not exist, or cannot be executed.
        LauncherClosed: the daemon is shutting down.
    """
    async with _started(config, spawner, jails, environ) as process, _connected(process, config.name) as streams:
        yield streams


@asynccontextmanager
async def _connected(
    process: JailedProcess, name: str
) -> AsyncIterator[tuple[anyio.abc.ObjectReceiveStream[SessionMessage | Exception], anyio.abc.ObjectSendStream[SessionMessage], StdioServer]]:
    """The session's streams over a started server's pipes; leaving stops the server."""
    server = StdioServer(process)
    read_send, read_receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_send, write_receive = anyio.create_memory_object_stream[SessionMessage](0)
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_read_stdout, process, read_send, name)
            nursery.start_soon(_write_stdin, process, write_receive)
            nursery.start_soon(_drain_stderr, process, server)
            nursery.start_soon(_wait_exit, server)
            try:
                yield read_receive, write_send, server
            finally:
                with trio.CancelScope(shield=True):
                    await _stop(server)
                nursery.cancel_scope.cancel()
    finally:
        for stream in (read_send, read_receive, write_send, write_receive):
            stream.close()
        process.close_pipes()


async def _read_stdout(
    process: JailedProcess, sink: MemoryObjectSendStream[SessionMessage | Exception], name: str
) -> None:
    """Server stdout -> session: one JSON-RPC message per line; the end of stdout ends the session's stream."""
    buffer = b""
    with sink:
        while True:
            try:
                chunk = await process.stdout.receive_some(_READ_SIZE)
            except (trio.ClosedResourceError, trio.BrokenResourceError, OSError):
                return
            if not chunk:
                return
            *lines, buffer = (buffer + chunk).split(b"\n")
            for line in lines:
                if not line.strip():
                    continue
                try:
                    item: SessionMessage | Exception = SessionMessage(
                        types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                    )
                except ValueError as exc:
                    # A stray print on stdout: the session reports it; the connection goes on.
                    log.warning("MCP server %s wrote a line that is not JSON-RPC: %.200r", name, line)
                    item = exc
                try:
                    await sink.send(item)
                except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                    return


async def _write_stdin(process: JailedProcess, source: MemoryObjectReceiveStream[SessionMessage]) -> None:
    """Session -> server stdin, one line per message."""
    assert process.stdin is not None
    with source:
        async for message in source:
            data = message.message.model_dump_json(by_alias=True, exclude_unset=True).encode("utf-8") + b"\n"
            try:
                await process.stdin.send_all(data)
            except (trio.ClosedResourceError, trio.BrokenResourceError, OSError):
                return


async def _drain_stderr(process: JailedProcess, server: StdioServer) -> None:
    """Keep the server's stderr flowing, and its last lines for error messages."""
    assert process.stderr is not None
    pending = b""
    while True:
        try:
            chunk = await process.stderr.receive_some(_READ_SIZE)
        except (trio.ClosedResourceError, trio.BrokenResourceError, OSError):
            return
        if not chunk:
            return
        *lines, pending = (pending + chunk).split(b"\n")
        for line in lines:
            text = line.decode("utf-8", "replace")
            server.stderr_tail.append(text)
            log.debug("mcp server pid %d: %s", server.pid, text)


async def _wait_exit(server: StdioServer) -> None:
    server.returncode = await server.process.wait()
    server.exited.set()


async def _stop(server: StdioServer) -> None:
    """The MCP spec's stop: close stdin, give it a moment, then its group gets SIGTERM and SIGKILL."""
    process = server.process
    if process.stdin is not None:
        process.stdin.close()
    with trio.move_on_after(_EXIT_GRACE):
        await server.exited.wait()
    # Also when it exited: a child it left in its group must not outlive it.
    await process.stop(_KILL_GRACE)
    server.returncode = process.returncode
