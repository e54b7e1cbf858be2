"""Background processes of a session: the process actor's body and the per-session table.

``terminal(background=True)`` builds a ``BackgroundSpec``; the session creates a record in
its ``ProcessTable`` and runs ``run_background_process`` in a nursery that outlives the
turn (the actor ``process:proc_<12 hex>``). The ``process`` tool reads and steers records
through the table. ``pty_argv`` runs a background command on a pseudo-terminal.
"""

from __future__ import annotations

from tools.background._buffer import LogSlice, RollingBuffer
from tools.background._pty import PTY_NEEDS_PIPE_NOTE, pty_argv, pty_breaks_command
from tools.background._runner import Notify, run_background_process, start_background_process
from tools.background._table import (
    BackgroundSpec,
    ProcessInfo,
    ProcessNotification,
    ProcessRecord,
    ProcessStatus,
    ProcessTable,
    ProcessTableStatistics,
    new_process_id,
)
from tools.background._watch import WatchBreaker, WatchMatch, WatchMatcher
from tools.background.errors import (
    BackgroundError,
    ProcessLimitReached,
    ProcessNotFound,
    StdinUnavailable,
)

__all__ = [
    "BackgroundError",
    "BackgroundSpec",
    "LogSlice",
    "Notify",
    "PTY_NEEDS_PIPE_NOTE",
    "ProcessInfo",
    "ProcessLimitReached",
    "ProcessNotFound",
    "ProcessNotification",
    "ProcessRecord",
    "ProcessStatus",
    "ProcessTable",
    "ProcessTableStatistics",
    "RollingBuffer",
    "StdinUnavailable",
    "WatchBreaker",
    "WatchMatch",
    "WatchMatcher",
    "new_process_id",
    "pty_argv",
    "pty_breaks_command",
    "run_background_process",
    "start_background_process",
]
