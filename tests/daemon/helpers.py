"""Running a real daemon and the real CLI as child processes for the daemon tests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from actors.platform.client import ControlClient
from actors.platform.errors import DaemonNotRunning
from actors.platform.paths import DaemonPaths

REPO = Path(__file__).resolve().parents[2]
START_TIMEOUT = 20.0


def environment(home: Path, **extra: str) -> dict[str, str]:
    """The environment of a child: our own, with HERMES_ACTORS_HOME set."""
    env = dict(os.environ, HERMES_ACTORS_HOME=str(home), PYTHONUNBUFFERED="1")
    env.update(extra)
    return env


def run_cli(home: Path, *args: str, timeout: float = 30.0, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``hermes-actors ARGS`` to completion."""
    return subprocess.run(
        [sys.executable, "-m", "actors.platform", *args],
        env=environment(home),
        cwd=REPO,
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


class DaemonProcess:
    """A ``hermes-actors daemon`` child process and its files."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.paths = DaemonPaths(home)
        self.log_path = home.parent / f"{home.name}-daemon.log"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, wait: bool = True) -> DaemonProcess:
        """Start the daemon; with ``wait``, return once it answers."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "actors.platform", "daemon"],
            env=environment(self.home),
            cwd=REPO,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=self._log,
        )
        if wait:
            self.wait_ready()
        return self

    def wait_ready(self) -> None:
        """Wait until the daemon answers a Hello."""
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise AssertionError(f"daemon exited with {self.process.returncode}:\n{self.log()}")
            try:
                self.client().close()
                return
            except DaemonNotRunning:
                time.sleep(0.05)
        raise AssertionError(f"daemon did not answer within {START_TIMEOUT} s:\n{self.log()}")

    def client(self, **kwargs: Any) -> ControlClient:
        """A new connection to the daemon."""
        return ControlClient.connect(self.paths, **kwargs)

    def log(self) -> str:
        """Everything the daemon wrote to stderr so far."""
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def signal(self, signum: int) -> None:
        """Send ``signum`` to the daemon."""
        assert self.process is not None
        self.process.send_signal(signum)

    def wait(self, timeout: float) -> int:
        """Wait for the daemon to exit; its status."""
        assert self.process is not None
        return self.process.wait(timeout)

    def stop(self) -> None:
        """Stop the daemon (SIGTERM, then SIGKILL) and close its log."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if hasattr(self, "_log"):
            self._log.close()
