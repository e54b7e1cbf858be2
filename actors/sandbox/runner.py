"""One execute_code run: private directory, RPC server, child process, limits, and the result.

The child runs through the session's jail, with its private directory bound in (the RPC socket there is
the only socket of the daemon's the script can see). Cancellation is the caller's: run :meth:`Sandbox.run`
inside the tool worker's scope (the session runs it as a :class:`~actors.sandbox.jobs.SandboxJob`). When
that scope is cancelled (interrupt, budget, kill) the child and everything it started are stopped
(SIGTERM, SIGKILL after the grace) under a shield, ``on_interrupted`` receives an ``interrupted`` result
holding the output so far followed by ``[execution interrupted — user sent a new message]``, and
``Cancelled`` propagates::

    interrupted: list[SandboxResult] = []
    sandbox = Sandbox(code, call_tool=..., allowed_tools=..., config=..., jail=ctx.jail,
                      on_interrupted=interrupted.append)
    with turn_scope:
        result = await sandbox.run()
    if turn_scope.cancelled_caught:
        result = interrupted[-1]

The script's own timeout (``code_execution.timeout``) is not a cancellation: it returns a ``timeout``
result normally.
"""

from __future__ import annotations

import enum
import logging
import math
import os
import secrets
import site
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager

import attrs
import trio

from actors import ActorBase
from supervisor import ChildSpec, RestartType, open_actor_system
from actors.sandbox.calls import AnswerRejected, CallTool, RepeatRejected
from actors.sandbox.errors import SandboxSetupError
from actors.sandbox.result import INTERRUPTED_NOTICE, STDERR_SEPARATOR, SandboxResult, SandboxStatus, SandboxToolCall
from actors.sandbox.gate import ToolGate
from actors.sandbox.server import RpcServer
from actors.sandbox.spare import Spare, SpareInterpreters, SpareRecipe
from actors.sandbox.stubs import sandbox_tools
from actors.sandbox.workspace import open_workspace, remove_workspace
from config.sandbox import CodeExecutionConfig
from tools.errors import ToolError
from tools.jail import HeadTailBuffer, JailedProcess, LauncherClosed, SessionJail, drain
from tools.redact import redact_secrets

log = logging.getLogger(__name__)

# How long pipes may stay open after the child is stopped (held by a process it left behind).
PIPE_LINGER_SECONDS = 0.5
# A script making thousands of quick calls must not flood the session's listeners with progress events.
PROGRESS_MIN_INTERVAL_SECONDS = 0.25
# What ``site`` would put on the child's path (the child runs with -S, see child_environment): this
# interpreter's site-packages, never the user's own.
_SITE_PACKAGES: tuple[str, ...] = tuple(site.getsitepackages())


def _truncation_notice(omitted: int, total: int) -> str:
    """The seeds' marker where the middle of the script's output was dropped."""
    return f"\n\n[OUTPUT TRUNCATED - {omitted} bytes omitted out of {total} total]\n\n"


class SandboxState(enum.Enum):
    """Lifecycle of a :class:`Sandbox`; it runs once."""

    CREATED = "created"  # constructed, run() not called yet
    STARTING = "starting"  # directory, socket and child being set up
    RUNNING = "running"  # child running, tool calls served
    STOPPING = "stopping"  # child exited or being killed; collecting its output
    FINISHED = "finished"  # result set, directory removed


@attrs.frozen
class SandboxStatistics:
    """A snapshot of one run for the actor tree (``…/tool:<id>/sandbox``).

    Attributes:
        state: Where the run is in its lifecycle.
        pid: The child's pid (its jail's outer bwrap when jailed), None before it started.
        tool_calls: Tool calls dispatched so far.
        in_flight: Tool calls running or waiting for the gate now.
        elapsed_seconds: Time since run() started.
        stdout_bytes: Stdout bytes the script has written so far.
        stderr_bytes: Stderr bytes the script has written so far.
    """

    state: SandboxState
    pid: int | None
    tool_calls: int
    in_flight: int
    elapsed_seconds: float
    stdout_bytes: int
    stderr_bytes: int


class Sandbox:
    """Runs one script in a child process whose tool calls come back through an RPC server.

    Args:
        code: The Python source the model wrote.
        call_tool: The session's own tool-execution path; every script call goes through it.
        answer_rejected: The session's answer to a call its tool rejects before running; such calls are
            answered by the RPC server at once, without a job. None: every call is a job.
        repeat_rejected: The session's answers to such a call made again unchanged, told by a thread of the
            connection's own (:mod:`actors.sandbox.readers`). None: each is answered on the event loop.
        allowed_tools: The session's enabled tools; intersected with the sandbox allow-list here.
        config: The ``code_execution`` limits.
        on_progress: Receives "execute_code: 3 tool calls, 12 s" after each call and periodically.
        on_tool_call: Receives a :class:`SandboxToolCall` for the transcript after each call.
        on_interrupted: Receives the ``interrupted`` result (the output so far) when the caller's
            scope cancels the run, before ``Cancelled`` propagates.
        jail: The session's jail; the child starts through it, its directory bound in.
        gate: Admits concurrent calls under the batch rules (``tools.parallel.ToolConcurrencyGate``);
            calls run one at a time when None.
        cwd: Returns the session's working directory, for the gate's path checks.
        env_passthrough: Variable names passed to the child even if they look secret.
        environ: The environment the child's is derived from (the daemon's by default).
        base_dir: Where the private directory is created (the system temp dir by default).
        redact: Applied to the output before it is returned.
        owner: The member of the actor tree the RPC server runs under (as ``rpc``): the run's
            :class:`~actors.sandbox.jobs.SandboxJob`. None: a private actor system, for a run
            outside any tree.
        spares: The session's spare interpreter: the run takes it if it waits for a run like this one
            (else it starts cold), and has the next one started once it ended. None: every run starts cold.
    """

    def __init__(
        self,
        code: str,
        *,
        call_tool: CallTool,
        answer_rejected: AnswerRejected | None = None,
        repeat_rejected: RepeatRejected | None = None,
        allowed_tools: frozenset[str],
        config: CodeExecutionConfig,
        on_progress: Callable[[str], None] = lambda text: None,
        on_tool_call: Callable[[SandboxToolCall], None] = lambda call: None,
        on_interrupted: Callable[[SandboxResult], None] = lambda result: None,
        jail: SessionJail,
        gate: ToolGate | None = None,
        cwd: Callable[[], str] = os.getcwd,
        env_passthrough: Iterable[str] = (),
        environ: Mapping[str, str] | None = None,
        base_dir: str | None = None,
        redact: Callable[[str], str] = redact_secrets,
        owner: ActorBase | None = None,
        spares: SpareInterpreters | None = None,
    ) -> None:
        self._code = code
        self._call_tool = call_tool
        self._answer_rejected = answer_rejected
        self._repeat_rejected = repeat_rejected
        self._tools = sandbox_tools(allowed_tools)
        self._config = config
        self._on_progress = on_progress
        self._on_tool_call = on_tool_call
        self._on_interrupted = on_interrupted
        self._jail = jail
        self._gate = gate
        self._cwd = cwd
        self._passthrough = tuple(env_passthrough)
        self._environ = environ
        self._base_dir = base_dir
        self._redact = redact
        self._owner = owner
        self._spares = spares
        # Invariant: set once the child started (a run that never got so far starts no spare).
        self._ran = False
        self._state = SandboxState.CREATED
        self._started: float | None = None
        self._last_progress = -math.inf
        self._server: RpcServer | None = None
        self._process: JailedProcess | None = None
        self._stdout = HeadTailBuffer(config.max_stdout_bytes, notice=_truncation_notice)
        self._stderr = HeadTailBuffer(config.max_stderr_bytes, notice=_truncation_notice)
        # Invariant: set once the interrupted result was handed to on_interrupted.
        self._interrupted = False

    @property
    def tools(self) -> frozenset[str]:
        """The tools the script can call."""
        return self._tools

    @property
    def state(self) -> SandboxState:
        """Where the run is in its lifecycle."""
        return self._state

    def statistics(self) -> SandboxStatistics:
        """A snapshot for the actor tree: state, pid, tool calls, elapsed time, output so far."""
        server = self._server.counters() if self._server is not None else None
        return SandboxStatistics(
            state=self._state,
            pid=self._process.pid if self._process is not None else None,
            tool_calls=server.tool_calls if server else 0,
            in_flight=server.in_flight if server else 0,
            elapsed_seconds=self._elapsed(),
            stdout_bytes=self._stdout.total_bytes,
            stderr_bytes=self._stderr.total_bytes,
        )

    async def run(self) -> SandboxResult:
        """Run the script to its end or its timeout and return the result.

        Raises:
            RuntimeError: the sandbox was already run.
            Cancelled: the caller's scope was cancelled; ``on_interrupted`` has had the output so far.
        """
        if self._state is not SandboxState.CREATED:
            raise RuntimeError("a Sandbox runs only once")
        self._state = SandboxState.STARTING
        self._started = trio.current_time()
        if sys.platform == "win32":
            return self._failure("execute_code is not available on Windows. Use normal tool calls instead.")
        if not self._code.strip():
            return self._failure("No code provided.")
        try:
            result = await self._run_in_workspace()
        except BaseException:
            if not self._interrupted:  # stopped before the child ran
                self._interrupt(None)
            raise
        finally:
            self._state = SandboxState.FINISHED
        if self._ran and self._spares is not None:
            self._spares.refill(self._recipe(), os.environ if self._environ is None else self._environ)
        return result

    async def _run_in_workspace(self) -> SandboxResult:
        environ = os.environ if self._environ is None else self._environ
        recipe = self._recipe()
        spare = await self._spares.take(recipe, environ) if self._spares is not None else None
        if spare is not None:
            started = await self._run_spare(spare)
            if started is not None:
                return started
        try:
            workspace, sock = await trio.to_thread.run_sync(open_workspace, self._code, self._tools, self._base_dir)
        except SandboxSetupError as exc:
            return self._failure(str(exc))
        except OSError as exc:
            return self._failure(f"Could not create the sandbox directory: {exc}")
        try:
            token = secrets.token_urlsafe(32)
            env = recipe.environment(environ, workspace, token)
            argv = [sys.executable, "-S", workspace.script_path]

            async def spawn() -> JailedProcess:
                return await self._jail.spawn(argv, cwd=workspace.directory, env=env, binds=[workspace.directory])

            return await self._run_in(trio.socket.from_stdlib_socket(sock), token, spawn)
        finally:
            with trio.CancelScope(shield=True):
                await trio.to_thread.run_sync(remove_workspace, workspace)

    async def _run_spare(self, spare: Spare) -> SandboxResult | None:
        """The run in the spare interpreter ``spare``; None when it could not be started (it is gone: the run
        starts cold). Its process, socket and directory are removed at the end, whatever happens."""
        process = spare.process
        try:
            try:
                if self._config.memory_limit_mb is not None:  # before the script runs: no unlimited start
                    await process.limit_memory(self._config.memory_limit_mb)
                await spare.go(self._code)
            except (OSError, trio.BrokenResourceError, trio.ClosedResourceError) as exc:
                log.info("the spare execute_code interpreter could not start its script: %s", exc)
                return None

            async def started() -> JailedProcess:
                return process

            return await self._run_in(trio.socket.from_stdlib_socket(spare.listener), spare.token, started)
        finally:
            with trio.CancelScope(shield=True):
                if process.returncode is None:
                    await process.stop(self._config.kill_grace_seconds)
                process.close_pipes()
                spare.listener.close()
                await trio.to_thread.run_sync(remove_workspace, spare.workspace)

    async def _run_in(
        self, listener: trio.socket.SocketType, token: str, start: Callable[[], Awaitable[JailedProcess]]
    ) -> SandboxResult:
        self._server = server = RpcServer(
            listener,
            call_tool=self._call_tool,
            answer_rejected=self._answer_rejected,
            repeat_rejected=self._repeat_rejected,
            allowed_tools=self._tools,
            token=token,
            max_tool_calls=self._config.max_tool_calls,
            per_call_timeout=self._config.per_call_timeout,
            run_deadline=self._deadline(),
            gate=self._gate,
            cwd=self._cwd,
            on_tool_call=self._record_call,
            redact=self._redact,
        )
        async with self._serving(server), trio.open_nursery() as nursery:
            try:
                process = await start()
            except (OSError, ToolError, LauncherClosed) as exc:
                return self._failure(f"could not start the sandbox child: {exc}")
            self._ran = True
            nursery.start_soon(self._tick_progress)
            result = await self._supervise(process)
            nursery.cancel_scope.cancel()
        # The server has stopped: what its connections (and their reader threads) refused after the child
        # ended is counted now.
        return attrs.evolve(result, unrecorded_calls=server.counters().unrecorded)

    def _recipe(self) -> SpareRecipe:
        return SpareRecipe(
            jail=self._jail, tools=self._tools, passthrough=self._passthrough,
            site_packages=() if self._config.strict else _SITE_PACKAGES, base_dir=self._base_dir,
        )  # fmt: skip

    @asynccontextmanager
    async def _serving(self, server: RpcServer) -> AsyncIterator[None]:
        """Run ``server`` under the owner (a private actor system without one) for the body of the block,
        then stop it and wait until it and its calls are gone."""
        if self._owner is None:
            async with open_actor_system() as system:
                await system.root.start_child(ChildSpec("rpc", lambda: server, restart=RestartType.TEMPORARY))
                yield
            return
        handle = await self._owner.spawn(server, "rpc")
        try:
            yield
        finally:
            handle.stop("the run ended", requested_by=self._owner.path)
            with trio.CancelScope(shield=True):
                await server.wait_stopped()

    async def _supervise(self, process: JailedProcess) -> SandboxResult:
        """Wait for the child within the timeout, stop it and all it started, and collect its output."""
        assert process.stderr is not None
        self._process = process
        self._state = SandboxState.RUNNING
        grace = self._config.kill_grace_seconds
        try:
            async with trio.open_nursery() as pipes:
                if self._config.memory_limit_mb is not None:
                    pipes.start_soon(process.limit_memory, self._config.memory_limit_mb)
                pipes.start_soon(drain, process.stdout, self._stdout)
                pipes.start_soon(drain, process.stderr, self._stderr)
                with trio.move_on_at(self._deadline()) as timeout:
                    await process.wait()
                self._state = SandboxState.STOPPING
                await process.stop(grace)
                pipes.cancel_scope.deadline = trio.current_time() + PIPE_LINGER_SECONDS
        except BaseException:
            # The caller's scope was cancelled: stop the child and keep everything it printed.
            self._state = SandboxState.STOPPING
            await process.stop(grace)
            with trio.CancelScope(shield=True), trio.move_on_after(PIPE_LINGER_SECONDS):
                await drain(process.stdout, self._stdout)
                await drain(process.stderr, self._stderr)
            self._interrupt(process.returncode)
            raise
        finally:
            process.close_pipes()
        if timeout.cancelled_caught:
            return self._outcome(SandboxStatus.TIMEOUT, process.returncode)
        if process.returncode == 0:
            return self._outcome(SandboxStatus.SUCCESS, 0)
        return self._outcome(SandboxStatus.ERROR, process.returncode, await self._jail.limits_reached())

    def _deadline(self) -> float:
        assert self._started is not None
        return self._started + self._config.timeout

    def _elapsed(self) -> float:
        return 0.0 if self._started is None else trio.current_time() - self._started

    def _record_call(self, call: SandboxToolCall) -> None:
        self._on_tool_call(call)
        if trio.current_time() - self._last_progress >= PROGRESS_MIN_INTERVAL_SECONDS:
            self._emit_progress()

    def _emit_progress(self) -> None:
        calls = self._server.tool_calls if self._server is not None else 0
        noun = "tool call" if calls == 1 else "tool calls"
        self._last_progress = trio.current_time()
        self._on_progress(f"execute_code: {calls} {noun}, {self._elapsed():.0f} s")

    async def _tick_progress(self) -> None:
        while True:
            await trio.sleep(self._config.progress_interval_seconds)
            self._emit_progress()

    def _failure(self, message: str) -> SandboxResult:
        return SandboxResult(status=SandboxStatus.ERROR, duration_seconds=self._elapsed(), error=message)

    def _interrupt(self, exit_code: int | None) -> None:
        self._interrupted = True
        self._on_interrupted(self._outcome(SandboxStatus.INTERRUPTED, exit_code))

    def _outcome(self, status: SandboxStatus, exit_code: int | None, limits: Sequence[str] = ()) -> SandboxResult:
        """Assemble the model-facing output for ``status`` from the captured streams, and the session's
        ``limits`` the script ran into."""
        output = self._stdout.render()
        stderr = self._stderr.render().strip()

        def append(block: str) -> None:
            nonlocal output
            if output and not output.endswith("\n"):
                output += "\n"
            output += block

        if status in (SandboxStatus.ERROR, SandboxStatus.TIMEOUT) and stderr:
            append(f"{STDERR_SEPARATOR}\n{stderr}\n")
        if status is SandboxStatus.TIMEOUT:
            append(f"Script timed out after {self._config.timeout:g}s and was killed.")
        if status is SandboxStatus.INTERRUPTED:
            append(INTERRUPTED_NOTICE)
        for reached in limits:
            append(f"Stopped at a limit: {reached}.\n")
        return SandboxResult(
            status=status,
            output=self._redact(output),
            tool_calls_made=self._server.tool_calls if self._server is not None else 0,
            duration_seconds=self._elapsed(),
            exit_code=exit_code,
            stdout_truncated=self._stdout.truncated,
            stdout_total_bytes=self._stdout.total_bytes,
            stderr_truncated=self._stderr.truncated,
            unrecorded_calls=self._server.counters().unrecorded if self._server is not None else 0,
        )

