"""What a session knows about its background processes: specs, records, the table."""

from __future__ import annotations

import enum
import secrets
from collections import OrderedDict
from typing import Any, Literal

import attrs
import trio

from config.terminal import BackgroundConfig
from tools.background._buffer import RollingBuffer
from tools.background._watch import WatchBreaker, WatchMatcher
from tools.background.errors import ProcessLimitReached, ProcessNotFound, StdinUnavailable
from tools.jail.session import SessionJail

__all__ = [
    "BackgroundSpec",
    "ProcessInfo",
    "ProcessNotification",
    "ProcessRecord",
    "ProcessStatus",
    "ProcessTable",
    "ProcessTableStatistics",
    "new_process_id",
]


def new_process_id() -> str:
    """A fresh id in the form the model sees: ``proc_`` and 12 hex digits."""
    return f"proc_{secrets.token_hex(6)}"


class ProcessStatus(enum.Enum):
    """Lifecycle of a background process."""

    STARTING = "starting"  # record created, process not spawned yet
    RUNNING = "running"  # spawned; output being read
    EXITED = "exited"  # ended by itself; exit_code set
    KILLED = "killed"  # stopped by a kill (or the session ending); exit_code is the signal
    FAILED = "failed"  # could not be spawned; error set

    @property
    def finished(self) -> bool:
        """True for the end states."""
        return self in (ProcessStatus.EXITED, ProcessStatus.KILLED, ProcessStatus.FAILED)


@attrs.frozen
class BackgroundSpec:
    """Everything needed to start one background process.

    ``kill_grace_seconds`` is the SIGTERM → SIGKILL delay used when it is stopped; ``jail`` is the
    session's, through which the process starts (None: it cannot start). ``pty`` runs it on a
    pseudo-terminal (see ``tools.background._pty``).
    """

    command: str = attrs.field(validator=attrs.validators.min_len(1))
    cwd: str
    env: dict[str, str] = attrs.field(factory=dict)
    notify_on_complete: bool = False
    watch_patterns: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    shell: str = "bash"
    kill_grace_seconds: float = 2.0
    pty: bool = False
    process_id: str = attrs.field(factory=new_process_id)
    jail: SessionJail | None = attrs.field(default=None, eq=False, repr=False)


@attrs.frozen
class ProcessInfo:
    """A snapshot of one background process, as the process tool reports it."""

    process_id: str
    command: str
    status: ProcessStatus
    pid: int | None
    exit_code: int | None
    started_at: float
    finished_at: float | None
    uptime_seconds: float
    cwd: str
    notify_on_complete: bool
    watch_patterns: tuple[str, ...]
    watch_disabled: bool
    output_chars: int
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready form; ``session_id`` is the name the model knows the id by."""
        out: dict[str, Any] = {
            "session_id": self.process_id,
            "command": self.command,
            "status": self.status.value,
            "pid": self.pid,
            "uptime_seconds": round(self.uptime_seconds, 1),
            "cwd": self.cwd,
            "output_chars": self.output_chars,
        }
        if self.exit_code is not None:
            out["exit_code"] = self.exit_code
        if self.notify_on_complete:
            out["notify_on_complete"] = True
        if self.watch_patterns:
            out["watch_patterns"] = list(self.watch_patterns)
            out["watch_disabled"] = self.watch_disabled
        if self.error:
            out["error"] = self.error
        return out


@attrs.frozen
class ProcessNotification:
    """A message for the session about one of its background processes.

    ``kind``: ``completed`` (exited while notify_on_complete), ``watch`` (a watched pattern
    matched) or ``watch_disabled`` (the watch was too noisy and now waits for the exit).
    ``output`` is the tail of the output (completed) or the matched lines (watch).
    """

    kind: Literal["completed", "watch", "watch_disabled"]
    process_id: str
    command: str
    output: str
    exit_code: int | None = None
    suppressed: int = 0
    truncated: bool = False

    def to_text(self) -> str:
        """The wording the agent reads when this notification wakes it."""
        if self.kind == "completed":
            head = f"[Background process {self.process_id} finished with exit code {self.exit_code}]"
            return f"{head}\nCommand: {self.command}\nOutput (last part):\n{self.output}"
        if self.kind == "watch_disabled":
            return (
                f"[Background process {self.process_id}: watch_patterns matched too often and were disabled; "
                f"you will be notified once when it exits]\nCommand: {self.command}"
            )
        extra = f" ({self.suppressed} earlier matching lines suppressed)" if self.suppressed else ""
        return f"[Background process {self.process_id} matched a watch pattern{extra}]\nCommand: {self.command}\n{self.output}"


class ProcessRecord:
    """The live state of one background process, owned by its process actor.

    The actor (``run_background_process``) is the only writer of status, pid and output;
    the process tool reads snapshots and asks for input or a kill through the methods here.
    """

    def __init__(self, spec: BackgroundSpec, config: BackgroundConfig, breaker: WatchBreaker, now: float) -> None:
        self.spec = spec
        self.config = config
        self.breaker = breaker
        self.output = RollingBuffer(config.buffer_chars)
        self.watch = WatchMatcher(spec.watch_patterns, config)
        self.notify_on_complete = spec.notify_on_complete
        self.status = ProcessStatus.STARTING
        self.pid: int | None = None
        self.exit_code: int | None = None
        self.error: str | None = None
        self.started_at = now
        self.finished_at: float | None = None
        self.last_used = now
        self.finished = trio.Event()
        # Set when a process(wait) has returned this process's exit to the model (Hermes's
        # "completion consumed"): the exit notification would only repeat it. ``exit_waiters``
        # counts the process(wait) calls blocked on the exit right now.
        self.exit_seen = False
        self.exit_waiters = 0
        self.cancel_scope = trio.CancelScope()
        self.stdin: trio.lowlevel.FdStream | None = None
        self._stdin_lock = trio.Lock()

    @property
    def process_id(self) -> str:
        """The ``proc_<12 hex>`` id."""
        return self.spec.process_id

    def info(self) -> ProcessInfo:
        """A snapshot of the current state."""
        now = trio.current_time()
        end = self.finished_at if self.finished_at is not None else now
        return ProcessInfo(
            process_id=self.process_id,
            command=self.spec.command,
            status=self.status,
            pid=self.pid,
            exit_code=self.exit_code,
            started_at=self.started_at,
            finished_at=self.finished_at,
            uptime_seconds=max(0.0, end - self.started_at),
            cwd=self.spec.cwd,
            notify_on_complete=self.notify_on_complete,
            watch_patterns=self.spec.watch_patterns,
            watch_disabled=self.watch.disabled,
            output_chars=self.output.total_chars,
            error=self.error,
        )

    def kill(self) -> bool:
        """Ask the process actor to stop the process and all it started; False when it had already finished."""
        if self.status.finished:
            return False
        self.cancel_scope.cancel()
        return True

    async def wait_finished(self) -> None:
        """Wait until the process has ended and its output is fully read."""
        await self.finished.wait()

    async def write(self, data: str) -> None:
        """Write ``data`` to the process's stdin.

        Raises:
            StdinUnavailable: the process has finished or its stdin was closed.
        """
        async with self._stdin_lock:
            if self.stdin is None or self.status.finished:
                raise StdinUnavailable(f"Process {self.process_id} is not accepting input (exited or stdin closed).")
            try:
                await self.stdin.send_all(data.encode())
            except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
                raise StdinUnavailable(f"Process {self.process_id} closed its input.") from exc

    def close_stdin(self) -> bool:
        """Close the process's stdin (it sees end of file); False when it was not open."""
        stdin, self.stdin = self.stdin, None
        if stdin is None:
            return False
        # A synchronous close: ``aclose`` on a pipe never blocks, but a checkpoint here
        # could let a cancellation mask a real error.
        stdin.close()
        return True


@attrs.frozen
class ProcessTableStatistics:
    """Counts for the inspection commands (``statistics()`` in the Trio idiom)."""

    tracked: int
    running: int
    finished: int
    watch_breaker_trips: int
    watch_notifications_dropped: int


class ProcessTable:
    """The background processes of one session, by id.

    At most ``max_tracked`` entries: starting a new process evicts the least recently
    used finished one; finished entries older than ``finished_ttl_seconds`` disappear.
    """

    def __init__(self, config: BackgroundConfig | None = None) -> None:
        self.config = config if config is not None else BackgroundConfig()
        self.breaker = WatchBreaker(self.config)
        # Least recently used first.
        self._records: OrderedDict[str, ProcessRecord] = OrderedDict()

    def __len__(self) -> int:
        return len(self._records)

    def create(self, spec: BackgroundSpec) -> ProcessRecord:
        """Add a record for ``spec`` (not started yet).

        Raises:
            ProcessLimitReached: every tracked process is still running.
        """
        now = trio.current_time()
        self._prune(now)
        if len(self._records) >= self.config.max_tracked:
            victim = next((r for r in self._records.values() if r.status.finished), None)
            if victim is None:
                raise ProcessLimitReached(
                    f"This session already runs {self.config.max_tracked} background processes; "
                    "kill or wait for one (process action='list') before starting another."
                )
            del self._records[victim.process_id]
        record = ProcessRecord(spec, self.config, self.breaker, now)
        self._records[record.process_id] = record
        return record

    def get(self, process_id: str) -> ProcessRecord:
        """The record of ``process_id``, marked as recently used.

        Raises:
            ProcessNotFound: unknown (or expired) id.
        """
        self._prune(trio.current_time())
        record = self._records.get(process_id)
        if record is None:
            raise ProcessNotFound(f"No process with ID {process_id}")
        record.last_used = trio.current_time()
        self._records.move_to_end(process_id)
        return record

    def remove(self, process_id: str) -> None:
        """Forget a finished process (``close`` of a finished entry)."""
        self._records.pop(process_id, None)

    def records(self) -> list[ProcessRecord]:
        """Every tracked record, oldest first by start time."""
        self._prune(trio.current_time())
        return sorted(self._records.values(), key=lambda record: record.started_at)

    def list(self) -> list[ProcessInfo]:
        """Snapshots of every tracked process, oldest first."""
        return [record.info() for record in self.records()]

    def statistics(self) -> ProcessTableStatistics:
        """A snapshot of how many processes are tracked and how the watch breaker fared."""
        running = sum(1 for record in self._records.values() if not record.status.finished)
        return ProcessTableStatistics(
            tracked=len(self._records),
            running=running,
            finished=len(self._records) - running,
            watch_breaker_trips=self.breaker.trips,
            watch_notifications_dropped=self.breaker.dropped,
        )

    def kill_all(self) -> int:
        """Ask every running process to stop (the session is ending); returns how many were asked."""
        return sum(record.kill() for record in list(self._records.values()))

    def _prune(self, now: float) -> None:
        ttl = self.config.finished_ttl_seconds
        for record in list(self._records.values()):
            if record.finished_at is not None and now - record.finished_at > ttl:
                del self._records[record.process_id]
