"""The hermes-actors side of the side-by-side benchmark: the real daemon, driven over its control socket.

The daemon runs as its own process with a private ``HERMES_ACTORS_HOME`` and the default config but
for the model (so its tools are jailed, ``workspace-write``, unless ``--sandbox`` says otherwise); this
process is only its client (one connection, attached to every session). Every CPU figure is the
daemon's: ``tree_cpu_s`` its whole process tree (its hosts, every jail and command its tools started;
see :mod:`tree_cpu`), the others its own processes from ``/proc/<pid>/stat``; the client's own work is
not counted. Prints one JSON object. Run by ``run.py``.
"""

from __future__ import annotations

import collections
import json
import os
import selectors
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from control.client import ControlClient, DaemonNotRunning  # noqa: E402
from control.paths import DaemonPaths  # noqa: E402
from messages import control as c  # noqa: E402
from messages.events import SubscriberDropped, TextDelta, TurnFinished  # noqa: E402
from messages.supervision import ActorState  # noqa: E402
from code_calls import marker  # noqa: E402
from tree_cpu import TreeCpu  # noqa: E402
from vs_common import parse_args, rss_kb, sleeping_descendant  # noqa: E402

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
# The tree whose daemon runs: ``--root`` (an older commit's worktree, for before/after in one run) or this one.
DAEMON_ROOT = ROOT


class Daemon:
    """A ``hermes-actors daemon`` child with its own home and ``config.yaml``."""

    def __init__(self, url: str, sandbox: str, toolsets: list[str], hosts: str = "1", root: Path = ROOT) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="vs-hermes-actors-")
        self.home = Path(self._dir.name) / "home"
        self.home.mkdir(mode=0o700)
        # Sessions work where Hermes's terminal does (run.py sets TERMINAL_CWD for both), so the
        # execute_code rows' files are in both programs' workspaces.
        shared = os.environ.get("TERMINAL_CWD")
        self.work = Path(shared) if shared else Path(self._dir.name) / "work"
        self.work.mkdir(exist_ok=True)
        config: dict[str, Any] = {
            "model": {"default": "bench-model", "provider": "custom", "base_url": url},
            "tools": {"enabled_toolsets": toolsets},
            "daemon": {"max_running_turns": 10000, "max_connections": 1024,
                       "hosts": hosts if hosts == "auto" else int(hosts)},
        }
        if sandbox != "default":
            config["sandbox"] = {"mode": sandbox}
        (self.home / "config.yaml").write_text(json.dumps(config))
        env = dict(os.environ, HERMES_ACTORS_HOME=str(self.home))
        self._log = open(Path(self._dir.name) / "daemon.log", "wb")  # noqa: SIM115 - closed in stop()
        self.tree = TreeCpu(f"vs-hermes-actors-{os.getpid()}")
        self.process = subprocess.Popen(
            # A --base tree from before the layout change starts its daemon as actors.platform.
            [sys.executable, "-m", "cli" if (Path(root) / "cli").is_dir() else "actors.platform", "daemon"], env=env, cwd=root,
            stdin=subprocess.DEVNULL, stdout=self._log, stderr=self._log, preexec_fn=self.tree.enter,
        )
        self.tree.follow(self.process.pid)
        self.client = self._connect()
        self.hosts = (os.cpu_count() or 1) if hosts == "auto" else int(hosts)
        for index in range(1, self.hosts + 1 if self.hosts > 1 else 1):
            self._wait_serving(f"hosts/host:{index}")
        self.attached: dict[str, ControlClient] = {}
        self._selector = selectors.DefaultSelector()
        self._ready: collections.deque[dict[str, Any]] = collections.deque()
        self._buffered: set[str] = set()

    def _connect(self) -> ControlClient:
        deadline = time.monotonic() + 30
        while True:
            try:
                return ControlClient.connect(DaemonPaths(self.home), client="vs-hermes", timeout=120)
            except DaemonNotRunning:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def _wait_serving(self, path: str) -> None:
        """Wait for a session host to serve (sessions created before would all go to the first one up)."""
        deadline = time.monotonic() + 60
        while self.client.request(c.Inspect(self.client.next_id(), path)).snapshot.state is not ActorState.RUNNING:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{path} did not start")
            time.sleep(0.1)

    def front_cpu_seconds(self) -> float:
        """The daemon process's own CPU (with ``daemon.hosts``, the front's share)."""
        return _cpu_ticks(self.process.pid) / CLOCK_TICKS

    def cpu_seconds(self) -> float:
        """The daemon's CPU so far (user + system): its process and, with ``daemon.hosts``, its host
        processes (its children; what tools start are their children, never counted)."""
        pids = [self.process.pid, *_children(self.process.pid)]
        return sum(_cpu_ticks(pid) for pid in pids) / CLOCK_TICKS

    def loop_cpu_seconds(self) -> tuple[float, float]:
        """The CPU of the event loops (each process's main thread; its worker threads not counted): the
        daemon's (with ``daemon.hosts``, the front's), and its host processes' together."""
        hosts = [pid for pid in _children(self.process.pid) if _is_host(pid)]
        return (_cpu_ticks(self.process.pid, thread=self.process.pid) / CLOCK_TICKS,
                sum(_cpu_ticks(pid, thread=pid) for pid in hosts) / CLOCK_TICKS)

    def store_counts(self) -> dict[str, int]:
        """Write transactions and busy retries (``BEGIN IMMEDIATE`` finding ``state.db`` locked by another
        process) of every store writer: the daemon's, and each host's."""
        paths = ["store", *(f"hosts/host:{index}/store" for index in range(1, self.hosts + 1 if self.hosts > 1 else 1))]
        counts = {"store_transactions": 0, "store_busy_retries": 0}
        for path in paths:
            details = self.client.request(c.Inspect(self.client.next_id(), path)).snapshot.details
            counts["store_transactions"] += details.get("transactions", 0)
            counts["store_busy_retries"] += details.get("busy_retries", 0)
        return counts

    def tools_cpu_seconds(self) -> float:
        """The CPU of the processes the tools started and the daemon (or its hosts) reaped so far."""
        pids = [self.process.pid, *_children(self.process.pid)]
        return sum(_cpu_ticks(pid, reaped=True) for pid in pids) / CLOCK_TICKS

    def tree_cpu_seconds(self) -> float:
        """The CPU of the daemon's whole process tree so far: its hosts, jails and their commands."""
        return self.tree.seconds()

    def rss_kb(self) -> int:
        """The daemon's resident set."""
        return rss_kb(self.process.pid)

    def create(self) -> str:
        """A new session in the work directory, with a connection of its own attached to it (as each user's
        ``attach`` would be: one connection carrying every session's events would fall behind)."""
        created = self.client.request(c.CreateSession(self.client.next_id(), cwd=str(self.work)))
        attached = self._connect()
        attached.request(c.Attach(attached.next_id(), created.session_id))
        self.attached[created.session_id] = attached
        self._selector.register(attached.fileno(), selectors.EVENT_READ, created.session_id)
        if attached.has_buffered():
            self._buffered.add(created.session_id)
        return created.session_id

    def send(self, session_id: str, text: str) -> None:
        """Send a message without waiting for its reply (events and replies are read in order later)."""
        attached = self.attached[session_id]
        attached.send(c.SendMessage(attached.next_id(), session_id, text))

    def receive(self) -> dict[str, Any]:
        """The next message from any attached session (raw: decoding every event into its class would
        make this client the bottleneck)."""
        while not self._ready:
            # Only a connection just read from can hold more frames than it returned: those are
            # drained first, without looking at the hundreds of others.
            while self._buffered:
                attached = self.attached[self._buffered.pop()]
                while attached.has_buffered():
                    self._ready.append(attached.receive_raw())
            if self._ready:
                break
            for key, _ in self._selector.select():
                attached = self.attached[key.data]
                self._ready.append(attached.receive_raw())
                if attached.has_buffered():
                    self._buffered.add(key.data)
        return self._ready.popleft()

    def log_tail(self, lines: int = 30) -> str:
        """The end of the daemon's log, to say why a run failed."""
        self._log.flush()
        text = (Path(self._dir.name) / "daemon.log").read_text(errors="replace")
        return "\n".join(text.splitlines()[-lines:])

    def stop(self) -> None:
        """Stop the daemon and remove its home."""
        try:
            self._selector.close()
            for attached in self.attached.values():
                attached.close()
            self.client.close()
        finally:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            self._log.close()
            self._dir.cleanup()
            self.tree.close()


def _children(pid: int) -> list[int]:
    """The process's children: each is listed under the thread that forked it (Trio forks in worker threads)."""
    children = []
    for listing in Path(f"/proc/{pid}/task").glob("*/children"):
        try:
            children += [int(child) for child in listing.read_text().split()]
        except OSError:
            continue
    return children


def _is_host(pid: int) -> bool:
    """Whether process ``pid`` is a session host (``daemon.hosts``)."""
    try:
        return b"actors.platform.daemon.cluster.hosts" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def _machine_busy_seconds() -> float:
    """The CPU every process on the machine used so far (all cores: user, nice, system, irq, softirq, steal)."""
    with open("/proc/stat") as handle:
        fields = [int(field) for field in handle.readline().split()[1:9]]
    return (sum(fields) - fields[3] - fields[4]) / CLOCK_TICKS


def _cpu_ticks(pid: int, *, reaped: bool = False, thread: int | None = None) -> int:
    """A process's own CPU ticks, or (``reaped``) those of its children it has waited for; ``thread``: that
    one thread's."""
    try:
        with open(f"/proc/{pid}/stat" if thread is None else f"/proc/{pid}/task/{thread}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0
    first = 13 if reaped else 11
    return int(fields[first]) + int(fields[first + 1])


@contextmanager
def daemon(url: str, sandbox: str, toolsets: list[str], hosts: str = "1") -> Iterator[Daemon]:
    """A running daemon for one workload (of the tree ``--root`` names: its code, this client)."""
    running = Daemon(url, sandbox, toolsets, hosts, DAEMON_ROOT)
    try:
        yield running
    except BaseException:
        print(running.log_tail(), file=sys.stderr)
        raise
    finally:
        running.stop()


class DriverFellBehind(RuntimeError):
    """The daemon dropped a session's subscription: this driver read its events too slowly, and would wait
    for a turn's end that never comes."""


def finished(message: dict[str, Any]) -> dict[str, Any] | None:
    """The message, if it ends a turn.

    Raises:
        DriverFellBehind: the message says the daemon dropped the subscription (a slow client never slows
            a session): the run fails now rather than hang.
    """
    if message.get("type") == SubscriberDropped.__name__:
        raise DriverFellBehind(f"session {message.get('session_id')}: subscription dropped ({message.get('reason')})")
    return message if message.get("type") == TurnFinished.__name__ else None


def turns(url: str, sandbox: str, sessions: int, count: int, hosts: str = "1") -> dict[str, Any]:
    """``sessions`` sessions at once, each running ``count`` turns of one ``terminal true``, on ``hosts``
    session-host processes (``daemon.hosts``; 1: the daemon runs them itself)."""
    with daemon(url, sandbox, ["terminal"], hosts) as d:
        ids = [d.create() for _ in range(sessions)]
        sent = dict.fromkeys(ids, 0)
        done = failed = 0
        start, cpu, front, tools, tree, mine, loops, machine = (
            time.perf_counter(), d.cpu_seconds(), d.front_cpu_seconds(), d.tools_cpu_seconds(), d.tree_cpu_seconds(),
            time.process_time(), d.loop_cpu_seconds(), _machine_busy_seconds(),
        )
        store = d.store_counts()
        for session_id in ids:
            d.send(session_id, "turn 0: check the machine [[bench tools=1]]")
            sent[session_id] = 1
        while done + failed < sessions * count:
            end = finished(d.receive())
            if end is None:
                continue
            if end["reason"] == "completed" and end["final_text"] == "All checks passed.":
                done += 1
            else:
                failed += 1
            session_id = end["session_id"]
            if sent[session_id] < count:
                d.send(session_id, f"turn {sent[session_id]}: check the machine [[bench tools=1]]")
                sent[session_id] += 1
        return {
            "turns": done, "failed": failed, "wall_s": time.perf_counter() - start, "cpu_s": d.cpu_seconds() - cpu,
            "front_cpu_s": d.front_cpu_seconds() - front, "tools_cpu_s": d.tools_cpu_seconds() - tools,
            "tree_cpu_s": d.tree_cpu_seconds() - tree, "tree_cpu_method": d.tree.method,
            "driver_cpu_s": time.process_time() - mine,
            "front_loop_cpu_s": d.loop_cpu_seconds()[0] - loops[0], "host_loops_cpu_s": d.loop_cpu_seconds()[1] - loops[1],
            "machine_cpu_s": _machine_busy_seconds() - machine,
            **{key: count - store[key] for key, count in d.store_counts().items()},
        }


def interrupt(url: str, sandbox: str, rounds: int) -> dict[str, Any]:
    """A turn running ``sleep 30`` is interrupted; milliseconds until the turn returned."""
    samples = []
    with daemon(url, sandbox, ["terminal"]) as d:
        session_id = d.create()
        for _ in range(rounds):
            d.send(session_id, "[[bench sleep=30]]")
            while not sleeping_descendant(d.process.pid):
                time.sleep(0.005)
            asked = time.perf_counter()
            d.client.request(c.InterruptSession(d.client.next_id(), session_id))
            while finished(d.receive()) is None:
                pass
            samples.append((time.perf_counter() - asked) * 1000)
    return {"interrupt_ms": statistics.median(samples), "samples": samples}


def idle(url: str, sandbox: str, sessions: int) -> dict[str, Any]:
    """``sessions`` idle sessions created: the daemon's RSS and CPU for each."""
    with daemon(url, sandbox, ["terminal"]) as d:
        d.create()
        before, cpu = d.rss_kb(), d.cpu_seconds()
        for _ in range(sessions):
            d.client.request(c.CreateSession(d.client.next_id(), cwd=str(d.work)))
        cpu = d.cpu_seconds() - cpu
        return {"rss_kb_each": (d.rss_kb() - before) / sessions, "create_ms_each": cpu / sessions * 1000}


def code(url: str, sandbox: str, kind: str, calls: int, path: str, rounds: int) -> dict[str, Any]:
    """An execute_code script timing ``calls`` calls of ``kind`` (figures in the server's stats)."""
    ok = 0
    with daemon(url, sandbox, ["terminal", "file", "code_execution"]) as d:
        session_id = d.create()
        for number in range(rounds):
            d.send(session_id, marker(kind, calls, path, number))
            while (end := finished(d.receive())) is None:
                pass
            ok += end["final_text"] == "Measured."
    return {"conversations_ok": ok}


def stream(url: str, sandbox: str, rounds: int, chunks: int, gap: float) -> dict[str, Any]:
    """Milliseconds from a message to its first streamed token at the attached client."""
    samples = []
    with daemon(url, sandbox, ["terminal"]) as d:
        for _ in range(rounds):
            session_id = d.create()
            start = time.perf_counter()
            d.send(session_id, f"[[bench slow={chunks} gap={gap}]]")
            first = None
            while finished(message := d.receive()) is None:
                if first is None and message.get("type") == TextDelta.__name__ and message.get("text"):
                    first = time.perf_counter()
            samples.append((first - start) * 1000 if first is not None else float("inf"))
    return {"first_token_ms": statistics.median(samples)}


def main() -> None:
    """Run one workload and print its figures as JSON."""
    args = parse_args(sandbox=True)
    global DAEMON_ROOT  # noqa: PLW0603 - set once, before any daemon starts
    DAEMON_ROOT = Path(args.root) if args.root else ROOT
    if args.workload == "turns":
        out = turns(args.url, args.sandbox, args.sessions, args.turns, args.hosts)
    elif args.workload == "interrupt":
        out = interrupt(args.url, args.sandbox, args.rounds)
    elif args.workload == "idle":
        out = idle(args.url, args.sandbox, args.sessions)
    elif args.workload == "code":
        out = code(args.url, args.sandbox, args.kind, args.calls, args.path, args.rounds)
    else:
        out = stream(args.url, args.sandbox, args.rounds, args.chunks, args.gap)
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
