"""A session's spare interpreter: the next execute_code run's jailed python, started ahead and waiting for its script.

A cold run pays the jail's set-up and python's start (10-30 ms) between the tool call and the script's first
line. After a run, the session starts the next run's child the way a run would (its own directory with the stub
and the socket, its own token, the same scrubbed environment, the session's jail with the directory bound in),
except that it runs :data:`BOOTSTRAP` waiting on its stdin. The next run whose recipe (jail, tools, environment,
path, directory) is still the one it was made with takes it (waiting for it if it is still starting) and sends
the script on its stdin; the script starts at once, as ``python -S script.py`` would have run it. Anything else
(another recipe, a spare that died) is a cold start. At most one spare per session; it lives in a task of the session's nursery
and is stopped, its directory and socket removed, when the session stops, after ``spare_idle_seconds`` unused,
or when a run with another recipe discards it.

Usage (the session owns one; a :class:`~actors.sandbox.runner.Sandbox` takes and refills it)::

    spares = SpareInterpreters(session.start_soon, idle_seconds=300)
    spare = await spares.take(recipe, environ)  # None: start cold
    ...
    spares.refill(recipe, environ)  # after the run
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import sys
from collections.abc import Awaitable, Callable, Mapping

import attrs
import trio

from actors.sandbox.environment import child_environment
from actors.sandbox.workspace import Workspace, open_workspace, remove_workspace
from tools.jail import JailedProcess, SessionJail

__all__ = ["BOOTSTRAP", "Spare", "SpareInterpreters", "SpareRecipe", "spare_argv"]

log = logging.getLogger(__name__)

#: The program a spare runs (``python -S -c BOOTSTRAP script_path``). It imports nothing (``sys`` and ``posix`` are
#: loaded by every interpreter), readies the compiler (a process's first ``compile`` costs 1-4 ms), says it is
#: ready (a newline on stdout, read by its keeper before any run sees its output) and waits for its go on stdin:
#: the script's length in bytes on a line, then the script (end of file first: it was not needed, and exits). It
#: writes the script to ``script_path`` as the daemon would (0600, a new file), reads /dev/null on stdin as a
#: cold run does, and runs the script in ``__main__`` with the globals, ``sys.argv`` and ``sys.path[0]`` that
#: ``python -S script.py`` gives it. An exception the script does not handle is printed without this program's
#: frame and exits with status 1; ``SystemExit`` and ``KeyboardInterrupt`` end the interpreter as they would have.
BOOTSTRAP = """\
def _run(sys, posix):
    compile(b"", "<spare>", "exec")  # the first compile of a process costs 1-4 ms: not the script's
    posix.write(1, b"\\n")
    head = b""
    while not head.endswith(b"\\n"):
        byte = posix.read(0, 1)
        if not byte:
            return
        head += byte
    size = int(head)
    parts = []
    while size:
        part = posix.read(0, min(size, 1 << 20))
        if not part:
            return
        parts.append(part)
        size -= len(part)
    source = b"".join(parts)
    null = posix.open("/dev/null", posix.O_RDONLY)
    posix.dup2(null, 0)
    posix.close(null)
    path = sys.argv[1]
    fd = posix.open(path, posix.O_WRONLY | posix.O_CREAT | posix.O_EXCL, 0o600)
    written = 0
    while written < len(source):
        written += posix.write(fd, source[written:])
    posix.close(fd)
    sys.argv[:] = [path]
    sys.path[0] = path.rpartition("/")[0]
    namespace = sys.modules["__main__"].__dict__
    builtins = namespace["__builtins__"]
    namespace.clear()
    namespace.update(
        __name__="__main__", __doc__=None, __package__=None, __spec__=None, __annotations__={}, __file__=path,
        __cached__=None, __builtins__=builtins,
        __loader__=sys.modules["_frozen_importlib_external"].SourceFileLoader("__main__", path),
    )
    try:
        exec(compile(source, path, "exec", dont_inherit=True), namespace)
    except (SystemExit, KeyboardInterrupt):
        raise
    except BaseException as exc:
        trace = exc.__traceback__
        exc.__traceback__ = None if trace is None else trace.tb_next
        sys.excepthook(type(exc), exc, exc.__traceback__)
        raise SystemExit(1) from None
import sys, posix
_run(sys, posix)
"""

#: What :data:`BOOTSTRAP` says once it waits for its go.
_READY = b"\n"
#: How long an unused spare may take to exit once told (python's start, at worst under load) before it is killed.
_EXIT_SECONDS = 10.0


class SpareFailed(Exception):
    """A spare interpreter ended before it was ready."""


def spare_argv(script_path: str) -> list[str]:
    """The command line of a spare that will run ``script_path``."""
    return [sys.executable, "-S", "-c", BOOTSTRAP, script_path]


@attrs.frozen
class SpareRecipe:
    """What a run's child is started with besides its environment; a spare serves only a run of the same.

    Attributes:
        jail: The session's jail (its policy and launcher).
        tools: The tools the stub offers.
        passthrough: Variable names passed to the child whatever they look like.
        site_packages: The path after the sandbox directory (none with ``code_execution.strict``).
        base_dir: Where the run's directory is made.
    """

    jail: SessionJail
    tools: frozenset[str]
    passthrough: tuple[str, ...]
    site_packages: tuple[str, ...]
    base_dir: str | None

    def environment(self, environ: Mapping[str, str], workspace: Workspace, token: str) -> dict[str, str]:
        """The environment a run in ``workspace`` presenting ``token`` gets, derived from ``environ``."""
        return child_environment(
            environ, sandbox_dir=workspace.directory, socket_path=workspace.socket_path, token=token,
            passthrough=self.passthrough, site_packages=self.site_packages,
        )  # fmt: skip


@attrs.define(eq=False)
class Spare:
    """A started interpreter handed to a run: from :meth:`SpareInterpreters.take` on, the run owns it all.

    Attributes:
        workspace: Its directory, holding the stub and the socket; the interpreter writes ``script.py`` there.
        listener: The socket listening there (the run's RPC server takes and closes it).
        token: The token its stub will present.
        env: Its environment.
        process: The waiting interpreter.
    """

    workspace: Workspace
    listener: socket.socket
    token: str
    env: dict[str, str]
    process: JailedProcess

    async def go(self, code: str) -> JailedProcess:
        """Let the interpreter run ``code`` (written to ``script.py`` by the interpreter itself: no trip to a
        worker thread here).

        Raises:
            trio.BrokenResourceError: it is gone (its stdin is closed at its end).
        """
        stdin = self.process.stdin
        assert stdin is not None
        source = code.encode()
        await stdin.send_all(b"%d\n%s" % (len(source), source))
        await stdin.aclose()
        return self.process


class _Keeper:
    """One spare's life in its task: started, waiting, then handed over or stopped and removed."""

    def __init__(self, recipe: SpareRecipe, environ: Mapping[str, str], idle_seconds: float) -> None:
        self.recipe = recipe
        self._environ = environ
        self._idle = idle_seconds
        self._scope = trio.CancelScope()
        # Invariant: set while the interpreter waits for a run; None before and after.
        self.ready: Spare | None = None
        # Set once it waits for a run, or has ended without ever doing so.
        self.settled = trio.Event()
        self._handed = False

    def discard(self) -> None:
        """Stop it, whatever it is doing (its task removes everything)."""
        self._scope.cancel()

    def hand_over(self) -> Spare:
        """The waiting spare, now the caller's to run and remove."""
        spare = self.ready
        assert spare is not None
        self.ready = None
        self._handed = True
        self._scope.cancel()
        return spare

    async def run(self) -> None:
        """Start the spare and keep it until it is handed over, discarded, idle too long, or dead."""
        made: tuple[Workspace, socket.socket] | None = None
        process: JailedProcess | None = None
        try:
            with self._scope:
                made = workspace, listener = await trio.to_thread.run_sync(
                    open_workspace, None, self.recipe.tools, self.recipe.base_dir
                )
                token = secrets.token_urlsafe(32)
                env = self.recipe.environment(self._environ, workspace, token)
                # Shielded: a jail stopped while bubblewrap still sets it up could leave its init behind; once
                # started, the spare ends cleanly on end of file.
                with trio.CancelScope(shield=True):
                    process = started = await self.recipe.jail.spawn(
                        spare_argv(workspace.script_path), cwd=workspace.directory, env=env, stdin=True,
                        binds=[workspace.directory],
                    )  # fmt: skip
                assert started.stdout is not None
                if await started.stdout.receive_some(1) != _READY:
                    raise SpareFailed(f"the spare interpreter exited as it started (status {await started.wait()})")
                self.ready = Spare(workspace, listener, token, env, started)
                self.settled.set()
                with trio.move_on_after(self._idle):
                    await started.wait()  # returns only if it died: it waits for its go
                log.debug("spare interpreter %s: %s", workspace.directory, "idle" if started.returncode is None else "died")
        except Exception as exc:  # no spare: the next run starts cold, and says why if it cannot either
            log.info("no spare execute_code interpreter: %s", exc)
        finally:
            self.ready = None
            self.settled.set()
            if not self._handed:
                with trio.CancelScope(shield=True):
                    await _remove(made, process)


async def _remove(made: tuple[Workspace, socket.socket] | None, process: JailedProcess | None) -> None:
    """Stop an unused spare and remove its directory and socket."""
    if process is not None:
        # End of file: it exits by itself, once started. Signalled while bubblewrap still sets its jail up, an
        # init not yet tied to bubblewrap's life could be left behind.
        process.close_pipes()
        with trio.move_on_after(_EXIT_SECONDS):
            await process.wait()
        await process.stop(0)  # it did not: stopped all the same
    if made is not None:
        workspace, listener = made
        listener.close()
        await trio.to_thread.run_sync(remove_workspace, workspace)


def _exited(pid: int) -> bool:
    """Whether our child ``pid`` has exited, without reaping it (its task does)."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True  # reaped already


class SpareInterpreters:
    """A session's spare interpreter for its next execute_code run: at most one, starting or waiting.

    Args:
        start_soon: Starts a task in the session's nursery (``ActorBase.start_soon``): the spare dies with it.
        idle_seconds: How long a spare waits unused before it is stopped.
    """

    def __init__(self, start_soon: Callable[[Callable[[], Awaitable[None]]], None], *, idle_seconds: float) -> None:
        self._start_soon = start_soon
        self._idle = idle_seconds
        self._keeper: _Keeper | None = None

    @property
    def waiting(self) -> bool:
        """Whether a spare waits for a run now."""
        return self._keeper is not None and self._keeper.ready is not None

    async def started(self) -> bool:
        """Wait until the spare being started waits for a run (True) or failed (False); False when none is."""
        keeper = self._keeper
        if keeper is None:
            await trio.lowlevel.checkpoint()
            return False
        await keeper.settled.wait()
        return keeper.ready is not None

    async def take(self, recipe: SpareRecipe, environ: Mapping[str, str]) -> Spare | None:
        """The spare for a run of ``recipe`` in ``environ``, now the caller's; None when there is none. One still
        starting for the same recipe is waited for: it is nearer its start than a cold start would be, and a
        second interpreter starting beside it would only compete for the CPU. A spare made for anything else is
        discarded."""
        keeper = self._keeper
        if keeper is None:
            return None
        if keeper.recipe == recipe and keeper.ready is None:
            await keeper.settled.wait()
        spare = keeper.ready
        if self._keeper is not keeper or spare is None:
            return None  # it failed to start, or another run took it meanwhile
        self._keeper = None
        if (
            keeper.recipe != recipe
            or spare.env != recipe.environment(environ, spare.workspace, spare.token)
            or _exited(spare.process.pid)  # killed while it waited; its task has not seen it yet
        ):
            keeper.discard()
            return None
        return keeper.hand_over()

    def refill(self, recipe: SpareRecipe, environ: Mapping[str, str]) -> None:
        """Start a spare for the next run of ``recipe`` unless one is starting or waiting for it already."""
        keeper = self._keeper
        if keeper is not None:
            if keeper.recipe == recipe:
                return
            keeper.discard()
        self._keeper = keeper = _Keeper(recipe, dict(environ), self._idle)

        async def keep() -> None:
            try:
                await keeper.run()
            finally:
                if self._keeper is keeper:
                    self._keeper = None

        try:
            self._start_soon(keep)
        except RuntimeError as exc:  # the session is closing: no spare, and the run's result stands
            log.debug("no spare execute_code interpreter started: %s", exc)
            self._keeper = None

    def close(self) -> None:
        """Stop the spare, if any (its task removes it)."""
        if self._keeper is not None:
            self._keeper.discard()
            self._keeper = None
