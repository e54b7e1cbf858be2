"""Starting the daemon in the background for a CLI command that needs one.

Two clients starting at once must end up with one daemon: a client takes
``run/start.lock`` before looking again and starting, so the second one
finds the first one's daemon answering. The daemon's own instance lock is the
last line of defence either way.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time

from control.client import ControlClient
from control.errors import EXIT_ALREADY_RUNNING, DaemonNotRunning, DaemonStartFailed
from control.lock import FileLock
from control.paths import DaemonPaths, ensure_private_dir

__all__ = ["connect_or_start", "spawn_daemon"]

#: How long a background daemon may take to answer.
START_TIMEOUT_SECONDS = 20.0
_POLL_SECONDS = 0.05
# What marks an error line in the daemon's log (see actors.platform.daemon.logs).
_LOG_ERROR = " ERROR "


def spawn_daemon(paths: DaemonPaths) -> subprocess.Popen[bytes]:
    """Start ``hermes-actors daemon`` detached, logging to ``logs/daemon.log``."""
    ensure_private_dir(paths.log_dir)
    log_fd = os.open(paths.log_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    env = dict(os.environ, HERMES_ACTORS_HOME=str(paths.home))
    try:
        return subprocess.Popen(
            [sys.executable, "-m", "cli", "daemon"],
            stdin=subprocess.DEVNULL,
            stdout=log_fd,
            stderr=log_fd,
            env=env,
            cwd="/",
            start_new_session=True,
        )
    finally:
        os.close(log_fd)


def connect_or_start(paths: DaemonPaths, client: str = "hermes-actors") -> ControlClient:
    """A connection to the daemon, starting one in the background when none answers.

    ``config.yaml``'s warnings are printed on stderr. A file a daemon would refuse is
    refused here, with its error, before any daemon is started; with a daemon already
    running (on the file as it was when it started) that error is only a warning.

    Raises:
        ConfigError: no daemon runs and ``config.yaml`` is unreadable or holds a bad value.
        DaemonStartFailed: the started daemon exited or did not answer in time.
    """
    try:
        running = ControlClient.connect(paths, client)
    except DaemonNotRunning:
        pass
    else:
        _warn_config_once(paths)
        return running
    from cli.config_check import checked_config

    checked_config(paths.home)
    ensure_private_dir(paths.run_dir)
    start_lock = FileLock(paths.start_lock_file)
    start_lock.acquire()
    try:
        try:
            return ControlClient.connect(paths, client)
        except DaemonNotRunning:
            pass
        log_start = _log_size(paths)
        process = spawn_daemon(paths)
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            try:
                return ControlClient.connect(paths, client)
            except DaemonNotRunning:
                pass
            status = process.poll()
            if status is not None:
                # Another daemon (started outside this lock) holds the instance lock: it will answer.
                if status != EXIT_ALREADY_RUNNING:
                    raise DaemonStartFailed(_exit_message(paths, status, log_start))
            time.sleep(_POLL_SECONDS)
        raise DaemonStartFailed(f"the daemon did not answer within {START_TIMEOUT_SECONDS:g} s; see {paths.log_file}")
    finally:
        start_lock.release()


def _warn_config_once(paths: DaemonPaths) -> None:
    """Warn about ``config.yaml`` unless this very file (same size and mtime) was found clean before.

    Reading it takes the config schema and a YAML parser, a fifth of ``chat``'s way to its
    prompt; a file with warnings is checked (and warned about) every time.
    """
    try:
        found = (paths.home / "config.yaml").stat()
    except FileNotFoundError:
        return
    stamp = f"{found.st_mtime_ns} {found.st_size}"
    record = paths.run_dir / "config.checked"
    try:
        if record.read_text() == stamp:
            return
    except OSError:
        pass
    from cli.config_check import warn_config

    if warn_config(paths.home):
        with contextlib.suppress(OSError):
            record.write_text(stamp)


def _log_size(paths: DaemonPaths) -> int:
    try:
        return paths.log_file.stat().st_size
    except FileNotFoundError:
        return 0


def _exit_message(paths: DaemonPaths, status: int, log_start: int) -> str:
    """Why the daemon this client started exited: its error lines, not only where the log is."""
    try:
        with paths.log_file.open("rb") as log:
            log.seek(log_start)
            written = log.read().decode("utf-8", "replace")
    except OSError:
        written = ""
    # The log keeps one event per line with newlines escaped; a person reads them as lines.
    errors = [
        line.split(": ", 1)[-1].replace("\\n", "\n")
        for line in written.splitlines()
        if _LOG_ERROR in line
    ]
    said = "".join(f"\n{error}" for error in errors)
    return f"the daemon exited with status {status}{':' if said else ''}{said}\n(its log: {paths.log_file})"
