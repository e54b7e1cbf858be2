"""The body of a background-process actor: spawn, read, watch, notify, stop."""

from __future__ import annotations

import codecs
import logging
import re
from collections.abc import Callable

import trio

from tools.ansi import clean_terminal_output, redact_output
from tools.background._pty import pty_argv
from tools.background._table import (
    BackgroundSpec,
    ProcessInfo,
    ProcessNotification,
    ProcessRecord,
    ProcessStatus,
    ProcessTable,
)
from tools.errors import CapabilityUnavailable, ToolError
from tools.jail import JailedProcess, LauncherClosed

__all__ = ["Notify", "run_background_process", "start_background_process"]

log = logging.getLogger(__name__)

_READ_SIZE = 65536
# How long to keep reading after the shell exits, for output still in flight from
# processes it left behind; those are then stopped with the rest of what it started.
_EXIT_DRAIN_SECONDS = 0.5
# An escape sequence cut by a read boundary: hold it back until its end arrives.
_INCOMPLETE_ESCAPE = re.compile(r"\x1b[^a-zA-Z\x07\\]{0,32}$")

Notify = Callable[[ProcessNotification], None]
"""Receives a process's notifications; must not block (the session's ``tell_nowait``)."""


async def run_background_process(
    spec: BackgroundSpec,
    record: ProcessRecord,
    notify: Notify,
    *,
    task_status: trio.TaskStatus[ProcessRecord] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Run ``spec`` as the session's process actor ``process:<id>`` until it ends or is killed.

    Meant for ``await nursery.start(run_background_process, spec, record, notify)`` in a
    nursery that outlives the turn: ``started`` is reported (with ``record``) once the process
    is spawned, or failed to spawn. Output goes into ``record.output``; ``notify`` (which
    must not block) receives watch matches and, with notify_on_complete, the exit.

    The process starts through ``spec.jail``. Cancelling the actor (``record.kill()``, or the
    session's nursery closing) stops it and everything it started: SIGTERM, then SIGKILL after
    ``spec.kill_grace_seconds``.
    """
    try:
        if spec.jail is None:
            raise CapabilityUnavailable("no jail was given to start it through")
        argv = [spec.shell, "-c", spec.command]
        if spec.pty:
            argv = pty_argv(argv, spec.kill_grace_seconds)
        process = await spec.jail.spawn(argv, cwd=spec.cwd, env=spec.env, stdin=True, merge_stderr=True)
    except (OSError, ToolError, LauncherClosed) as exc:
        record.status = ProcessStatus.FAILED
        record.error = f"Could not start the command: {exc}"
        record.finished_at = trio.current_time()
        record.finished.set()
        log.warning("background process %s failed to start: %s", spec.process_id, exc)
        task_status.started(record)
        return
    record.pid = process.pid
    record.stdin = process.stdin
    record.status = ProcessStatus.RUNNING
    log.info("background process %s started (pid %d)", spec.process_id, process.pid)
    task_status.started(record)
    completed = False
    try:
        # A kill that came in before this point has already cancelled the scope, so it
        # takes effect at the first checkpoint inside.
        with record.cancel_scope:
            await _supervise(process, record, notify)
            completed = True
    finally:
        # Runs on kill, on the session's cancellation and on normal exit alike: nothing it
        # started survives the actor.
        await process.stop(spec.kill_grace_seconds)
        record.close_stdin()
        process.close_pipes()
        record.exit_code = process.returncode
        record.finished_at = trio.current_time()
        record.status = ProcessStatus.EXITED if completed else ProcessStatus.KILLED
        record.finished.set()
        log.info("background process %s %s (exit code %s)", spec.process_id, record.status.value, record.exit_code)
    if record.status is ProcessStatus.EXITED and record.notify_on_complete:
        if record.exit_waiters:
            # A process(wait) blocked on this exit wakes with the event above: two checkpoints let it
            # run (tasks woken together run in any order) and mark the exit seen.
            await trio.lowlevel.checkpoint()
            await trio.lowlevel.checkpoint()
        if record.exit_seen:
            log.info("background process %s: exit already seen through the process tool; not notified", spec.process_id)
            return
        notify(
            ProcessNotification(
                kind="completed",
                process_id=spec.process_id,
                command=spec.command,
                output=redact_output(record.output.tail(record.config.notify_tail_chars)),
                exit_code=record.exit_code,
            )
        )


async def start_background_process(
    nursery: trio.Nursery, spec: BackgroundSpec, table: ProcessTable, notify: Notify
) -> ProcessInfo:
    """Track ``spec`` in ``table`` and start its process actor in ``nursery``; returns once spawned.

    The narrow spawner a session's ``ToolContext.start_background`` calls: ``nursery`` must
    outlive the turn (the session's own), ``notify`` must not block.

    Raises:
        ProcessLimitReached: the table is full of running processes.
    """
    record = table.create(spec)
    await nursery.start(run_background_process, spec, record, notify)
    return record.info()


async def _supervise(process: JailedProcess, record: ProcessRecord, notify: Notify) -> None:
    reader = _OutputReader(record, notify)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(reader.pump, process.stdout)
        await process.wait()
        with trio.move_on_after(_EXIT_DRAIN_SECONDS):
            await reader.eof.wait()
        nursery.cancel_scope.cancel()
    reader.flush()


class _OutputReader:
    """Decodes, cleans and stores a process's output, feeding complete lines to the watch."""

    def __init__(self, record: ProcessRecord, notify: Notify) -> None:
        self._record = record
        self._notify = notify
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._held = ""
        self._partial_line = ""
        self.eof = trio.Event()

    async def pump(self, stream: trio.abc.ReceiveStream) -> None:
        try:
            while chunk := await stream.receive_some(_READ_SIZE):
                self._take(self._decoder.decode(chunk))
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            pass
        self.eof.set()

    def flush(self) -> None:
        """Store whatever is still held back (the stream has ended)."""
        self._take(self._decoder.decode(b"", final=True), final=True)
        if self._partial_line and not self._record.watch.disabled:
            # A last line without a newline is still a line to watch.
            self._watch("", final=True)

    def _take(self, text: str, *, final: bool = False) -> None:
        text = self._held + text
        self._held = ""
        if not final:
            incomplete = _INCOMPLETE_ESCAPE.search(text)
            if incomplete:
                self._held = text[incomplete.start() :]
                text = text[: incomplete.start()]
        text = clean_terminal_output(text)
        if not text:
            return
        self._record.output.append(text)
        if not self._record.watch.disabled:
            self._watch(text, final)

    def _watch(self, text: str, final: bool) -> None:
        lines = (self._partial_line + text).split("\n")
        self._partial_line = "" if final else lines.pop()
        matched = self._record.watch.matching(lines)
        if not matched:
            return
        record = self._record
        now = trio.current_time()
        match = record.watch.offer(matched, now)
        if match is not None:
            if record.breaker.allow(now):
                self._notify(
                    ProcessNotification(
                        kind="watch",
                        process_id=record.process_id,
                        command=record.spec.command,
                        output=redact_output(match.text),
                        suppressed=match.suppressed,
                        truncated=match.truncated,
                    )
                )
        if record.watch.disabled:
            record.notify_on_complete = True
            log.info("watch on %s disabled: too many matches, or matches too often", record.process_id)
            self._notify(
                ProcessNotification(
                    kind="watch_disabled", process_id=record.process_id, command=record.spec.command, output=""
                )
            )
