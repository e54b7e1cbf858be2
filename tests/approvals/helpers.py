"""A ``hermes-actors`` child in a pseudo-terminal, read through a terminal emulator (pyte), and
what the approval tests share: a daemon configured by ``config.yaml``, scripted tool calls, and
what the model was told."""

from __future__ import annotations

import fcntl
import os
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyte

from tests.daemon.helpers import REPO, ScriptedProviderProcess, environment

#: How long a test waits for something a person would see before it fails.
SCREEN_TIMEOUT = 30.0


class PtyProcess:
    """``hermes-actors ARGS`` with a pseudo-terminal as its stdin, stdout and stderr."""

    def __init__(self, home: Path, *args: str, columns: int = 140, rows: int = 45) -> None:
        self.screen = pyte.Screen(columns, rows)
        self.stream = pyte.ByteStream(self.screen)
        self.raw = b""
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
        self.master = master
        self.process = subprocess.Popen(
            [sys.executable, "-m", "actors.platform", *args],
            env=environment(home, TERM="xterm-256color", COLUMNS=str(columns), LINES=str(rows)),
            cwd=REPO, stdin=slave, stdout=slave, stderr=slave, start_new_session=True,
            # The pty becomes the child's controlling terminal, so Ctrl-C typed on it is a SIGINT.
            preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0),
        )
        os.close(slave)

    def text(self) -> str:
        """What the screen shows now, line by line."""
        return "\n".join(line.rstrip() for line in self.screen.display)

    def pump(self, timeout: float) -> None:
        """Feed the screen with what the child wrote within ``timeout`` seconds."""
        ready, _, _ = select.select([self.master], [], [], timeout)
        if not ready:
            return
        try:
            data = os.read(self.master, 65536)
        except OSError:  # the child closed the terminal
            data = b""
        if data:
            self.raw += data
            for part in data.split(b"\x1b[6n")[:-1] or ():
                # A cursor position request (prompt_toolkit sends one to lay out its toolbar): answer as a terminal does.
                self.stream.feed(part)
                cursor = self.screen.cursor
                os.write(self.master, f"\x1b[{cursor.y + 1};{cursor.x + 1}R".encode())
            self.stream.feed(data.rsplit(b"\x1b[6n", 1)[-1])

    def wait_for(self, predicate: Callable[[str], bool], timeout: float = SCREEN_TIMEOUT) -> str:
        """Read until ``predicate(screen text)`` holds; the text. Fails with the screen after ``timeout``."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self.text()
            if predicate(text):
                return text
            self.pump(0.05)
        raise AssertionError(f"not on screen within {timeout} s:\n{self.text()}")

    def type(self, keys: str) -> None:
        """Type ``keys`` on the terminal."""
        os.write(self.master, keys.encode())

    def wait_exit(self, timeout: float = SCREEN_TIMEOUT) -> int:
        """The child's exit status, reading its last output meanwhile."""
        deadline = time.monotonic() + timeout
        while self.process.poll() is None:
            if time.monotonic() > deadline:
                raise AssertionError(f"still running after {timeout} s:\n{self.text()}")
            self.pump(0.05)
        self.pump(0.1)
        return self.process.returncode

    def close(self) -> None:
        """Stop the child if it is still running, and close the terminal."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)
        os.close(self.master)


def write_config(home: Path, text: str) -> None:
    """``home/config.yaml`` with ``text``."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.yaml").write_text(text)


def script_command(provider: ScriptedProviderProcess, command: str, *extra: dict[str, Any], call_id: str = "call_cmd") -> None:
    """The model runs ``command`` with the terminal tool, then (after ``extra`` steps) says "finished"."""
    provider.push(
        {"tool_calls": [{"id": call_id, "name": "terminal", "arguments": {"command": command}}]},
        *extra,
        {"text": "finished"},
    )


def tool_result(provider: ScriptedProviderProcess, call_id: str = "call_cmd") -> str:
    """The terminal result the model was given for ``call_id`` (the newest request that holds it)."""
    for request in reversed(provider.requests()):
        body = request.get("body")
        messages = body.get("messages", []) if isinstance(body, dict) else []
        for message in messages:
            if message.get("role") == "tool" and message.get("tool_call_id") == call_id:
                return str(message["content"])
    raise AssertionError(f"no request carried the result of {call_id}")
