"""A real daemon with things worth stealing, for the isolation tests: a secret in its environment and in
``.env``, a fake user home with an ssh key, a workspace and a directory outside every writable root.

Everything lives under ``/var/tmp``: a jailed process's ``/tmp`` is its session's private one, so a
workspace under the host's ``/tmp`` would be out of its sight.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from messages import control as c
from tests.daemon.helpers import DaemonProcess, ScriptedProviderProcess
from tools.jail.runtime import RuntimeDir

DAEMON_SECRET = "hx-daemon-env-secret-5f1c"
DOTENV_SECRET = "hx-dotenv-secret-9a7e"
SSH_KEY_TEXT = "hx-fake-private-key-3b2d"
#: How long a scripted turn may take (a tool call may run for many seconds).
TURN_TIMEOUT = 90.0


class JailedDaemon:
    """A daemon and the files the isolation tests attack and check."""

    def __init__(self, config: str = "") -> None:
        self.base = Path(tempfile.mkdtemp(prefix="ha-", dir="/var/tmp"))
        self.home = self.base / "home"
        self.user_home = self.base / "user"
        self.workspace = self.base / "work"
        self.outside = self.base / "outside"
        for directory in (self.home, self.user_home / ".ssh", self.workspace, self.outside):
            directory.mkdir(parents=True, mode=0o700)
        (self.home / "config.yaml").write_text(config)
        (self.home / ".env").write_text(f"HX_DOTENV_SECRET={DOTENV_SECRET}\n")
        (self.user_home / ".ssh" / "id_ed25519").write_text(SSH_KEY_TEXT + "\n")
        self.daemon = DaemonProcess(self.home)
        self.daemon.extra_env = {"HOME": str(self.user_home), "HX_DAEMON_SECRET": DAEMON_SECRET}

    @property
    def runtime(self) -> RuntimeDir:
        """The daemon's runtime directory (where its start recorded it)."""
        return RuntimeDir.for_home(self.home, self.daemon.paths.user_dir)

    def start(self) -> JailedDaemon:
        """Start the daemon and wait until it answers."""
        self.daemon.start()
        return self

    def stop(self) -> None:
        """Stop the daemon and remove every file of the test."""
        self.daemon.stop()
        shutil.rmtree(self.base, ignore_errors=True)

    @property
    def pid(self) -> int:
        """The daemon's pid."""
        assert self.daemon.process is not None
        return self.daemon.process.pid

    def create_session(self, provider: ScriptedProviderProcess, sandbox: str | None = None, cwd: Path | None = None) -> str:
        """A new session working in the workspace (or ``cwd``); its id."""
        with self.daemon.client() as client:
            reply = client.request(c.CreateSession(
                client.next_id(), cwd=str(cwd or self.workspace), model="scripted-model", provider="custom",
                base_url=provider.base_url, api_mode="chat_completions", sandbox=sandbox,
            ))
        return reply.session_id

    def tool_turn(
        self, provider: ScriptedProviderProcess, session_id: str, tool: str, args: dict[str, Any], text: str | None = None
    ) -> str:
        """One turn (started by ``text``, or "run TOOL") in which the model calls ``tool`` once; the tool's
        result as the model got it."""
        provider.push({"tool_calls": [{"id": "call_1", "name": tool, "arguments": args}]}, {"text": "turn over"})
        with self.daemon.client() as client:
            client.request(c.Attach(client.next_id(), session_id, None))
            client.request(c.SendMessage(client.next_id(), session_id, text or f"run {tool}"))
            client.settimeout(TURN_TIMEOUT)
            while type(event := client.receive()).__name__ != "TurnFinished":
                if type(event).__name__ == "ApprovalRequested":
                    # The user approves: what a command may do is the jail's to stop, not the approval's.
                    client.request(c.AnswerSessionRequest(client.next_id(), session_id, event.request_id, "once"))
        assert event.reason == "completed", event
        return self.tool_results(session_id)[-1]

    def tool_results(self, session_id: str) -> list[str]:
        """Every tool result stored for a session, oldest first."""
        with self.daemon.client() as client:
            shown = client.request(c.ShowSession(client.next_id(), session_id, head=200, tail=0))
        return [str(m["message"]["content"]) for m in shown.head if m["message"]["role"] == "tool"]

    def status(self) -> c.StatusReply:
        """The daemon's status reply."""
        with self.daemon.client() as client:
            return client.request(c.Status(client.next_id()))


@contextmanager
def jailed_daemon(prepare: Callable[[JailedDaemon], None]) -> Iterator[JailedDaemon]:
    """A running :class:`JailedDaemon` that ``prepare`` set up first (its config, files, environment); removed after."""
    running = JailedDaemon()
    prepare(running)
    running.start()
    try:
        yield running
    finally:
        running.stop()


def output_of(result: str) -> str:
    """The text a terminal or execute_code result carries (its output, or its error)."""
    data = json.loads(result)
    return str(data.get("output") or "") + str(data.get("error") or "")


def processes_with(marker: str) -> list[int]:
    """The pids of live processes whose command line holds ``marker`` (zombies excluded)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as file:
                cmdline = file.read()
            with open(f"/proc/{entry}/stat", "rb") as file:
                state = file.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in cmdline and state != b"Z":
            found.append(int(entry))
    return found


def wait_until(predicate: Any, timeout: float, what: str) -> None:
    """Poll ``predicate`` until it holds (a real process's state, watched from outside), or fail."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)
