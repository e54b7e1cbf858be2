"""Running one foreground terminal command to completion, timeout or cancellation."""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
from collections.abc import Callable
from typing import Any, Literal

import attrs
import trio

from config.terminal import TerminalConfig
from tools.ansi import clean_terminal_output, redact_output
from tools.errors import ToolError
from tools.jail import HeadTailBuffer, JailedProcess, LauncherClosed, ResidentProcess, SessionJail
from tools.terminal._shell import ShellSnapshot, parse_state, shell_argv
from tools.terminal.errors import RunAlreadyStarted

__all__ = ["EXIT_INTERRUPTED", "EXIT_TIMEOUT", "ForegroundResult", "ForegroundRun", "run_foreground"]

log = logging.getLogger(__name__)

EXIT_TIMEOUT = 124
"""Exit code reported for a command stopped by its timeout (as GNU ``timeout`` does)."""
EXIT_INTERRUPTED = 130
"""Exit code reported for a command stopped by an interrupt (as a shell does for Ctrl-C)."""

_READ_SIZE = 65536
# The lowest descriptor number the shell's state pipe takes.
_STATE_FD_FLOOR = 200
# The most of the shell's state kept: twice what the largest environment a program can be started with
# (ARG_MAX with an 8 MB stack) takes once quoted. More is a command writing to the pipe itself.
STATE_LIMIT_BYTES = 16 * 1024 * 1024
# A state this large or smaller (a usual environment is a few KB, about 75 µs) is read on the event loop.
_PARSE_ON_LOOP_BYTES = 64 * 1024
# The most a pipe holds (Linux's default /proc/sys/fs/pipe-max-size): what a stopped command can have left in it.
_PIPE_MAX_BYTES = 1024 * 1024
# How much of the newest output a progress report shows.
_PROGRESS_BYTES = 500


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:] + "."


@attrs.frozen
class ForegroundResult:
    """What a foreground command produced.

    ``shell`` is the cwd and environment the command left (None when it was stopped
    before its shell could report them: the session keeps its previous state). ``cwd_missing``: the
    command never ran because its working directory does not exist (``error`` says so).
    """

    output: str
    exit_code: int
    omitted_bytes: int = 0
    timed_out: bool = False
    interrupted: bool = False
    note: str | None = None
    error: str | None = None
    shell: ShellSnapshot | None = None
    cwd_missing: bool = False

    def to_dict(self) -> dict[str, Any]:
        """The tool-result form the model reads."""
        out: dict[str, Any] = {"output": self.output, "exit_code": self.exit_code}
        if self.omitted_bytes:
            out["truncated"] = True
        if self.timed_out:
            out["timed_out"] = True
        if self.interrupted:
            out["interrupted"] = True
        if self.note:
            out["note"] = self.note
        out["error"] = self.error
        return out

    def to_json(self) -> str:
        """``to_dict`` as JSON text."""
        return json.dumps(self.to_dict(), ensure_ascii=False)


class ForegroundRun:
    """One foreground command: start it with ``run()``; read ``partial_result()`` if it is stopped.

    The command runs through the session's jail (``jail.spawn``), on plain pipes: as in Hermes Agent,
    only a background process gets a pseudo-terminal. ``run()`` stops the command and
    everything it started when it is cancelled (SIGTERM, then SIGKILL after the configured grace)
    before letting the cancellation propagate, so the caller can then build the model's answer
    from what was printed::

        run = ForegroundRun(command, cwd=..., env=..., config=..., jail=ctx.jail)
        with trio.move_on_after(timeout) as scope:
            result = await run.run()
        if scope.cancelled_caught:
            result = run.partial_result("timeout", timeout=timeout)

    A run is single-use.
    """

    def __init__(
        self,
        command: str,
        *,
        cwd: str,
        env: dict[str, str],
        config: TerminalConfig,
        jail: SessionJail,
        on_output: Callable[[str], None] | None = None,
    ) -> None:
        self.command = command
        self.cwd = cwd
        self.env = env
        self._config = config
        self._jail = jail
        # Live output for watchers (cleaned, redacted, at most one call per progress interval).
        self._on_output = on_output
        self._last_progress = float("-inf")
        self._output = HeadTailBuffer(config.max_output_bytes)
        self._eof = trio.Event()
        self._started = False
        self.pid: int | None = None
        self.started_at: float | None = None

    async def run(self) -> ForegroundResult:
        """Run the command until it exits; returns its output, exit code and shell state.

        Raises:
            RunAlreadyStarted: the run was already started once.
        """
        if self._started:
            raise RunAlreadyStarted("a ForegroundRun can be started only once")
        self._started = True
        try:
            state = _StatePipe()
        except OSError as exc:
            return ForegroundResult(output="", exit_code=126, error=f"Cannot run the command: no shell state pipe ({exc}).")
        try:
            result = await self._run(state)
        finally:
            state.close()
        if result.error is not None:
            return result
        data = state.data()
        if len(data) <= _PARSE_ON_LOOP_BYTES:
            return attrs.evolve(result, shell=parse_state(data))
        # A command can leave megabytes of variables (up to the limit): seconds of parsing, off the loop.
        return attrs.evolve(result, shell=await trio.to_thread.run_sync(parse_state, data))

    def partial_result(self, reason: Literal["timeout", "interrupted"], *, timeout: float | None = None) -> ForegroundResult:
        """The result of a run that was stopped: the output so far and a note saying why."""
        text = redact_output(self._text())
        if reason == "timeout":
            note = f"[Command timed out after {timeout:g}s and was killed]" if timeout else "[Command timed out]"
            code = EXIT_TIMEOUT
        else:
            note = "[Command interrupted]"
            code = EXIT_INTERRUPTED
        output = f"{text}\n{note}" if text else note
        return ForegroundResult(
            output=output,
            exit_code=code,
            omitted_bytes=self._output.omitted_bytes,
            timed_out=reason == "timeout",
            interrupted=reason == "interrupted",
            note=note.strip("[]"),
        )

    async def _start(self, state: _StatePipe) -> JailedProcess | ResidentProcess:
        """Start the command: in the session's resident shell when it has one free, else in a jail of its own."""
        argv = shell_argv(self._config.shell, self.command, state.write_fd)
        shell = self._jail.shell if self._config.resident_shell else None
        if shell is not None:
            process = await shell.spawn(
                argv, policy=self._jail.policy, cwd=self.cwd, env=self.env, state_fd=state.write_fd,
                idle_seconds=self._config.resident_idle_seconds,
            )  # fmt: skip
            if process is not None:
                return process
        return await self._jail.spawn(argv, cwd=self.cwd, env=self.env, merge_stderr=True, pass_fds=(state.write_fd,))

    async def _run(self, state: _StatePipe) -> ForegroundResult:
        try:
            process = await self._start(state)
        except FileNotFoundError as exc:
            missing = self.cwd if exc.filename == self.cwd or not os.path.isdir(self.cwd) else self._config.shell
            return ForegroundResult(
                output="", exit_code=127, error=f"Cannot run the command: {missing} does not exist ({exc.strerror}).",
                cwd_missing=exc.filename == self.cwd,
            )
        except (ToolError, LauncherClosed) as exc:
            return ForegroundResult(output="", exit_code=126, error=str(exc))
        except OSError as exc:
            return ForegroundResult(output="", exit_code=126, error=f"Cannot run the command: {exc}")
        finally:
            # The shell holds its own copy: ours must go, or nothing could ever end the pipe.
            state.close_write_end()
        self.pid = process.pid
        self.started_at = trio.current_time()
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._pump, process.stdout)
                nursery.start_soon(state.pump)
                await process.wait()
                # Children the command left running may still hold the pipe open.
                with trio.move_on_after(self._config.exit_drain_seconds):
                    await self._eof.wait()
                nursery.cancel_scope.cancel()
            # The shell has exited, so all its trap wrote is in the pipe (a leftover child may hold
            # the pipe open, so its end is not awaited).
            state.read_available()
        finally:
            # Shielded inside: on cancellation everything it started is gone before Cancelled
            # propagates. After a normal exit it stops what the command left behind (``cmd &``,
            # nohup) in full-access; a jail's leftovers ended with the jail, a resident shell's were
            # swept before it reported the exit (and are reported).
            leftovers = await process.stop(self._config.kill_grace_seconds)
            # What the command printed before it was stopped and the reader had not taken yet: a
            # cancelled reader leaves it in the pipe, and it is the last the model would see.
            _read_available(process.stdout.fileno(), self._output.append, limit=_PIPE_MAX_BYTES)
            process.close_pipes()
        note = None
        if leftovers:
            note = (
                "The command left processes running in the background; they were stopped. "
                "Use terminal(background=true) for servers and other long-running processes."
            )
            log.info("foreground command left processes holding its output; group %d stopped", process.pid)
        assert process.returncode is not None
        reached = await self._jail.limits_reached() if process.returncode != 0 else []
        return ForegroundResult(
            output=self._text(),
            exit_code=process.returncode,
            omitted_bytes=self._output.omitted_bytes,
            note=note,
            error=_sentence("; ".join(reached)) if reached else None,
        )

    async def _pump(self, stream: trio.abc.ReceiveStream) -> None:
        try:
            while chunk := await stream.receive_some(_READ_SIZE):
                self._output.append(chunk)
                if self._on_output is not None:
                    self._report(chunk, self._on_output)
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            pass
        self._eof.set()

    def _report(self, chunk: bytes | bytearray, on_output: Callable[[str], None]) -> None:
        now = trio.current_time()
        if now - self._last_progress < self._config.progress_interval_seconds:
            return
        self._last_progress = now
        text = clean_terminal_output(chunk[-_PROGRESS_BYTES:].decode("utf-8", errors="replace")).strip()
        if text:
            on_output(redact_output(text))

    def _text(self) -> str:
        return clean_terminal_output(self._output.render()).rstrip("\n")


def _read_available(fd: int, keep: Callable[[bytes], None], *, limit: int | None = None) -> None:
    """Give ``keep`` what the non-blocking pipe ``fd`` holds now, up to its end or ``limit`` bytes
    (a writer still alive cannot keep the caller reading), without waiting."""
    taken = 0
    with contextlib.suppress(BlockingIOError, OSError):
        while (limit is None or taken < limit) and (chunk := os.read(fd, _READ_SIZE)):
            keep(chunk)
            taken += len(chunk)


class _StatePipe:
    """The pipe the shell's EXIT trap writes its working directory and environment to.

    The shell inherits the write end at a high descriptor number, clear of the 3-9 that scripts
    redirect. Reading it needs no file and no worker thread: it is read while the command runs (a
    large environment fills a pipe) and emptied once the shell has exited. What comes beyond
    :data:`STATE_LIMIT_BYTES` is read and dropped, and the state counts as missing.
    """

    def __init__(self) -> None:
        read, write = os.pipe()
        try:
            high = fcntl.fcntl(write, fcntl.F_DUPFD_CLOEXEC, _STATE_FD_FLOOR)
        except OSError:
            # A descriptor limit below the floor: the pipe keeps the number it has.
            self.write_fd = write
        else:
            os.close(write)
            self.write_fd = high
        self._write_open = True
        self._read = trio.lowlevel.FdStream(read)
        self._data = bytearray()
        self._overflowed = False

    async def pump(self) -> None:
        """Read what the shell writes until the pipe ends or the caller cancels."""
        try:
            while chunk := await self._read.receive_some(_READ_SIZE):
                self._keep(chunk)
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            pass

    def read_available(self) -> None:
        """Take what is in the pipe now, without waiting."""
        _read_available(self._read.fileno(), self._keep)

    def data(self) -> bytes:
        """Everything read from the shell; empty when it wrote more than the limit."""
        return b"" if self._overflowed else bytes(self._data)

    def _keep(self, chunk: bytes) -> None:
        if self._overflowed:
            return
        if len(self._data) + len(chunk) > STATE_LIMIT_BYTES:
            log.warning("terminal: the shell state pipe got more than %d bytes; the state is dropped", STATE_LIMIT_BYTES)
            self._overflowed = True
            self._data.clear()
            return
        self._data += chunk

    def close_write_end(self) -> None:
        """Close our copy of the write end (idempotent)."""
        if self._write_open:
            self._write_open = False
            os.close(self.write_fd)

    def close(self) -> None:
        """Close both ends (idempotent)."""
        self.close_write_end()
        self._read.close()


async def run_foreground(
    command: str, *, cwd: str, env: dict[str, str], config: TerminalConfig, jail: SessionJail
) -> ForegroundResult:
    """Run ``command`` in ``cwd`` with ``env`` through ``jail`` and return its result.

    Cancel it with the caller's scope (``trio.move_on_after`` for a timeout); to keep the
    output printed before the cancellation, use ``ForegroundRun`` directly.
    """
    return await ForegroundRun(command, cwd=cwd, env=env, config=config, jail=jail).run()
