"""Running a real daemon and the real CLI as child processes for the daemon tests."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from collections.abc import Callable
from typing import Any

from control.client import ControlClient
from control.errors import DaemonNotRunning
from control.paths import DaemonPaths
from messages import control as c
from messages.tree_json import snapshot_json
from tools.jail.runtime import RuntimeDir

REPO = Path(__file__).resolve().parents[2]
#: How long a daemon may take to answer its first Hello. A start is about 0.5 s of CPU, but with both cores shared
#: by parallel suites (load 20-50) it waited 20 s and more; a daemon that fails exits and is seen at once (the
#: wait polls its process), so only a hung start waits this long.
START_TIMEOUT = 60.0


def environment(home: Path, **extra: str) -> dict[str, str]:
    """The environment of a child: our own, with HERMES_ACTORS_HOME set."""
    env = dict(os.environ, HERMES_ACTORS_HOME=str(home), PYTHONUNBUFFERED="1")
    env.update(extra)
    return env


def run_cli(home: Path, *args: str, timeout: float = 30.0, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``hermes-actors ARGS`` to completion."""
    return subprocess.run(
        [sys.executable, "-m", "cli", *args],
        env=environment(home),
        cwd=REPO,
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def run_cli_bytes(
    home: Path, *args: str | bytes, stdin: bytes | None = None, cwd: str | bytes | Path = REPO, timeout: float = 30.0
) -> subprocess.CompletedProcess[bytes]:
    """Run ``hermes-actors ARGS`` to completion with raw bytes: arguments, input or a working directory
    that need not be UTF-8; its output is bytes too."""
    return subprocess.run(
        [sys.executable, "-m", "cli", *args],
        env=environment(home, PYTHONPATH=str(REPO)),
        cwd=cwd,
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        timeout=timeout,
    )


class DaemonProcess:
    """A ``hermes-actors daemon`` child process and its files."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.paths = DaemonPaths(home)
        self.log_path = home.parent / f"{home.name}-daemon.log"
        self.process: subprocess.Popen[bytes] | None = None
        #: Run in the child before the daemon starts (a resource limit, say).
        self.preexec: Any = None
        #: More environment variables of the daemon (a fake HOME, a secret to guard).
        self.extra_env: dict[str, str] = {}
        #: What the daemon's command runs under (``setpriv``, to be an ordinary user).
        self.runner: list[str] = []

    def start(self, wait: bool = True) -> DaemonProcess:
        """Start the daemon; with ``wait``, return once it answers."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            [*self.runner, sys.executable, "-m", "cli", "daemon"],
            env=environment(self.home, **self.extra_env),
            cwd=REPO,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=self._log,
            preexec_fn=self.preexec,
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
        log = self.log()
        # A daemon too slow to answer is still stopped: left running, it would outlive the test.
        self.stop()
        raise AssertionError(f"daemon did not answer within {START_TIMEOUT} s:\n{log}")

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

    def stop(self, *, keep_runtime: bool = False) -> None:
        """Stop the daemon (SIGTERM, then SIGKILL) and close its log; its runtime directory goes too
        unless ``keep_runtime`` (a test of what the next start cleans up)."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if hasattr(self, "_log"):
            self._log.close()
        if not keep_runtime:
            # A daemon killed with -9 and never restarted leaves its runtime directory (outside the test's home),
            # and where it may mount, the tmpfs over it.
            RuntimeDir.for_home(self.home, self.paths.user_dir).remove()


def database_daemon(home: Path, url: str, *, cluster: bool = False, secret: str | None = None) -> DaemonProcess:
    """A daemon (not started yet) whose store is the PostgreSQL database at ``url``; with ``cluster``,
    its peer link listens on loopback (``daemon.cluster_listen``), with ``secret`` as the link's secret."""
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    config: dict[str, Any] = {"store": {"url": url}}
    if cluster:
        config["daemon"] = {"cluster_listen": "127.0.0.1:0"}
    (home / "config.yaml").write_text(json.dumps(config))
    daemon = DaemonProcess(home)
    if secret is not None:
        daemon.extra_env["HERMES_ACTORS_CLUSTER_SECRET"] = secret
    return daemon


def cli_json(daemon: DaemonProcess, *args: str) -> dict[str, Any]:
    """``hermes-actors ARGS --json`` against ``daemon``: what it printed, which must be a success."""
    result = run_cli(daemon.home, *args, "--json")
    assert result.returncode == 0, result.stderr
    return dict(json.loads(result.stdout))


def inspect_json(home: Path, path: str) -> dict[str, Any]:
    """What ``hermes-actors inspect PATH --json`` prints, asked over the control socket from this process:
    the same request and rendering without a CLI process's start-up (about 0.3 s of CPU), for the polls
    that wait on an actor's details.

    Raises:
        RequestFailed: the daemon has no actor at ``path``.
        DaemonNotRunning: no daemon answers in ``home``.
    """
    with ControlClient.connect(DaemonPaths(home)) as client:
        reply = client.request_raw(c.Inspect(client.next_id(), path))
    return dict(snapshot_json(reply["snapshot"], reply["now"]))


def wait_for(what: str, probe: Callable[[], Any], timeout: float = 30.0) -> Any:
    """``probe()``'s first truthy value, polled until ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def events_until_turn_finished(client: ControlClient) -> list[Any]:
    """The events a client receives, up to and including the next ``TurnFinished``."""
    events = []
    while True:
        event = client.receive()
        events.append(event)
        if type(event).__name__ == "TurnFinished":
            return events


def attached_turn(client: ControlClient, session_id: str, text: str) -> list[Any]:
    """Attach ``client`` to a session, send ``text``, and return the events of that turn."""
    client.request(c.Attach(client.next_id(), session_id, None))
    client.request(c.SendMessage(client.next_id(), session_id, text))
    return events_until_turn_finished(client)


class ScriptedProviderProcess:
    """``python -m providers.scripted --rules`` as a child process, scriptable over HTTP."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "providers.scripted", "--port", "0", "--rules"],
            cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )
        assert self.process.stdout is not None
        self.base_url = self.process.stdout.readline().strip()
        assert self.base_url.startswith("http://127.0.0.1:"), self.base_url

    def push(self, *steps: dict[str, Any]) -> None:
        """Append steps to the script (the rules answer once it is empty)."""
        root = self.base_url.removesuffix("/v1")
        request = urllib.request.Request(
            f"{root}/_admin/script", data=json.dumps(list(steps)).encode(), method="POST",
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.status == 200

    def requests(self) -> list[dict[str, Any]]:
        """Every request the server received so far (method, path, headers, body), oldest first."""
        root = self.base_url.removesuffix("/v1")
        with urllib.request.urlopen(f"{root}/_admin/requests", timeout=10) as response:
            return list(json.loads(response.read())["requests"])

    def reset(self) -> None:
        """Drop what is left of the script."""
        root = self.base_url.removesuffix("/v1")
        request = urllib.request.Request(f"{root}/_admin/reset", data=b"{}", method="POST")
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.status == 200

    def stop(self) -> None:
        """Stop the server."""
        self.process.terminate()
        self.process.wait(10)
        if self.process.stdout is not None:
            self.process.stdout.close()

    def create_session(self, client: ControlClient, cwd: str) -> str:
        """Create a session that talks to this server (over ``client``); its id."""
        return str(client.request(c.CreateSession(
            client.next_id(), cwd=cwd, model="scripted-model", provider="custom", base_url=self.base_url,
            api_mode="chat_completions",
        )).session_id)

    def chat_flags(self, api_mode: str = "chat_completions") -> list[str]:
        """The CLI flags that point a new session at this server."""
        return ["--model", "scripted-model", "--provider", "custom", "--base-url", self.base_url, "--api-mode", api_mode]


class LineReader:
    """Lines of a child's stdout, read on a thread so a test can wait with a timeout."""

    def __init__(self, stream: Any) -> None:
        self.lines: queue.Queue[str | None] = queue.Queue()

        def pump() -> None:
            for line in stream:
                self.lines.put(line)
            self.lines.put(None)

        threading.Thread(target=pump, daemon=True).start()

    def drain(self, timeout: float = 10.0) -> None:
        """Wait until the stream has ended (so it can be closed without racing the reader)."""
        deadline = time.monotonic() + timeout
        while self.lines.get(timeout=max(0.01, deadline - time.monotonic())) is not None:
            pass

    def until(self, predicate: Any, timeout: float = 30.0) -> list[str]:
        """Lines up to and including the first one ``predicate`` accepts."""
        seen: list[str] = []
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"timed out; lines so far: {seen[-5:]}") from None
            if line is None:
                raise AssertionError(f"stream ended; lines so far: {seen[-5:]}")
            seen.append(line)
            if predicate(line):
                return seen
