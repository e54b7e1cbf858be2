"""The everyday features' figures (issue 41); prints them.

    .venv/bin/python bench/bench_everyday.py [--reps 3] [--turns 15] [--messages 500]

Real daemons (default config, sessions jailed in workspace-write) against the scripted provider (the
learning loop's review, on by default, answered by a second one, so that it never takes a step of the
session's script); the
sessions' files under /var/tmp (a jailed session's /tmp is its own). CPU is user + system from /proc: the
daemon's own plus the children it waited for (git, hooks, jails); the CLI's from getrusage(RUSAGE_CHILDREN).

- checkpoints (``checkpoints.enabled: true``), a working directory of 1,000 files / 10 MB: a turn with one
  ``write_file`` whose snapshot is the directory's first, then one over an unchanged directory, then one
  after 10 files changed, each against the same turn with checkpoints off; then ``checkpoints restore``;
- a ``pre_tool_call`` command hook (``sh`` appending its event to a file): a turn with one ``read_file`` call with the hook, with a hook
  whose matcher names another tool, and with no hooks at all;
- the learning loop: a turn's latency with the review due after every turn (``memory.nudge_interval: 1``,
  its model a second scripted provider answering after 2 s) vs ``auxiliary.background_review.enabled: false``;
- ``import-hermes`` of ``tests/fixtures/hermes_0_19/home`` into a new home (no daemon running);
- ``sessions export --format html`` of a session of ``--messages`` messages.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import bench_api  # noqa: E402

from tests.daemon.checkpoint_helpers import checkpoint_daemon  # noqa: E402
from messages import control as c  # noqa: E402
from tests.daemon.helpers import REPO, DaemonProcess, ScriptedProviderProcess, events_until_turn_finished, run_cli  # noqa: E402

FILES, FILE_BYTES, CHANGED = 1000, 10 * 1024, 10
#: Seconds the review's model waits before answering (a slow auxiliary model).
REVIEW_LATENCY = 2.0
FIXTURE = REPO / "tests" / "fixtures" / "hermes_0_19" / "home"


def with_reviewer(reviewer: ScriptedProviderProcess, **sections: Any) -> str:
    """A config of ``sections`` whose learning-loop review (on by default) is answered by ``reviewer``: it
    runs as it would, but never takes a step of the session's script."""
    review = {"model": "review-model", "provider": "custom", "base_url": reviewer.base_url}
    return json.dumps({**sections, "auxiliary": {"background_review": review}})


@contextmanager
def providers() -> Iterator[tuple[ScriptedProviderProcess, ScriptedProviderProcess]]:
    """The sessions' scripted provider and the review's (see :func:`with_reviewer`), stopped at the end."""
    provider, reviewer = ScriptedProviderProcess(), ScriptedProviderProcess()
    try:
        yield provider, reviewer
    finally:
        provider.stop()
        reviewer.stop()


def _daemon_cpu(pid: int) -> float:
    """User + system CPU of a process and of the children it waited for, in seconds (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(value) for value in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:.1f} ms"


class Turns:
    """Turns of one session in a daemon, each measured: (wall seconds, daemon CPU seconds)."""

    def __init__(self, daemon: DaemonProcess, provider: ScriptedProviderProcess, work: Path) -> None:
        self.daemon, self.provider = daemon, provider
        self.client = daemon.client()
        self.client.settimeout(120)
        self.session_id = provider.create_session(self.client, str(work))
        # Attached once: a second Attach on the same connection would deliver every event twice.
        self.client.request(c.Attach(self.client.next_id(), self.session_id, None))
        self.pid = daemon.process.pid if daemon.process else 0

    def run(self, *steps: dict[str, Any]) -> tuple[float, float]:
        self.provider.reset()
        self.provider.push(*steps)
        cpu, started = _daemon_cpu(self.pid), time.perf_counter()
        self.client.request(c.SendMessage(self.client.next_id(), self.session_id, "go, no tools"))
        finished = events_until_turn_finished(self.client)[-1]
        assert finished.reason == "completed", finished
        return time.perf_counter() - started, _daemon_cpu(self.pid) - cpu

    def close(self) -> None:
        self.client.close()


def _tool(name: str, **arguments: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """A turn's two steps: one call of ``name``, then a plain answer."""
    return {"tool_calls": [{"id": f"call_{time.monotonic_ns()}", "name": name, "arguments": arguments}]}, {"text": "done"}


def _fill(work: Path) -> None:
    for n in range(FILES):
        folder = work / f"dir{n // 100:02d}"
        folder.mkdir(exist_ok=True)
        (folder / f"file{n:04d}.bin").write_bytes(os.urandom(FILE_BYTES))


@contextmanager
def _session(config: str, provider: ScriptedProviderProcess) -> Iterator[tuple[DaemonProcess, Path, Turns]]:
    with checkpoint_daemon(config) as (daemon, work):
        _fill(work)
        turns = Turns(daemon, provider, work)
        try:
            yield daemon, work, turns
        finally:
            turns.close()


def checkpoints(provider: ScriptedProviderProcess, reviewer: ScriptedProviderProcess, reps: int) -> None:
    """The checkpoint figures: each kind of snapshot against the same turn with checkpoints off."""
    kinds = ("the first snapshot", "a snapshot of an unchanged directory", f"a snapshot after {CHANGED} files changed", "off")
    walls: dict[str, list[float]] = {kind: [] for kind in (*kinds, "restore")}
    cpus: dict[str, list[float]] = {kind: [] for kind in (*kinds, "restore")}
    same = _tool("write_file", path="a.txt", content="original\n")  # the file's own content: nothing changes
    for _ in range(reps):
        with _session(with_reviewer(reviewer, checkpoints={"enabled": True}), provider) as (daemon, work, turns):
            for kind in kinds[:3]:
                if kind == kinds[2]:
                    for n in range(CHANGED):
                        (work / "dir05" / f"file{500 + n:04d}.bin").write_bytes(os.urandom(FILE_BYTES))
                wall, cpu = turns.run(*same)
                walls[kind].append(wall)
                cpus[kind].append(cpu)
            listed = json.loads(run_cli(daemon.home, "checkpoints", "list", turns.session_id, "--json").stdout)
            count = len(listed.get("checkpoints", listed if isinstance(listed, list) else []))
            pid = turns.pid
            cpu, child, started = _daemon_cpu(pid), _children_cpu(), time.perf_counter()
            result = run_cli(daemon.home, "checkpoints", "restore", turns.session_id, str(count), "--json", timeout=120)
            assert result.returncode == 0, result.stderr
            walls["restore"].append(time.perf_counter() - started)
            cpus["restore"].append(_daemon_cpu(pid) - cpu + _children_cpu() - child)
        with _session(with_reviewer(reviewer), provider) as (_daemon, _work, turns):
            wall, cpu = turns.run(*same)
            walls["off"].append(wall)
            cpus["off"].append(cpu)
    print(f"checkpoints, a directory of {FILES} files / {FILES * FILE_BYTES / 1e6:.0f} MB, {reps} reps (medians):")
    base_wall, base_cpu = statistics.median(walls["off"]), statistics.median(cpus["off"])
    for kind in kinds[:3]:
        print(f"  a turn with {kind}: {_ms(walls[kind])} wall, {_ms(cpus[kind])} daemon+git CPU; "
              f"the snapshot adds {(statistics.median(walls[kind]) - base_wall) * 1000:.1f} ms wall, "
              f"{(statistics.median(cpus[kind]) - base_cpu) * 1000:.1f} ms CPU")
    print(f"  the same turn, checkpoints off: {_ms(walls['off'])} wall, {_ms(cpus['off'])} CPU")
    print(f"  checkpoints restore to the first (CLI to done): {_ms(walls['restore'])} wall, "
          f"{_ms(cpus['restore'])} CPU (daemon, git, the CLI)")


def hooks(provider: ScriptedProviderProcess, reviewer: ScriptedProviderProcess, turns_count: int) -> None:
    """A pre_tool_call command hook's cost per tool call, and that no hook costs nothing."""
    seen = Path(tempfile.mkdtemp(prefix="bench-hooks-", dir="/var/tmp")) / "seen.jsonl"
    hook = f"sh -c 'cat >> {seen}; echo >> {seen}'"  # a user's hook reads its event; this one only keeps it
    configs = {
        "no hooks": with_reviewer(reviewer),
        "a hook for another tool": with_reviewer(reviewer, hooks={"pre_tool_call": [{"command": hook, "matcher": "terminal"}]}),
        "a pre_tool_call hook (sh)": with_reviewer(reviewer, hooks={"pre_tool_call": [{"command": hook}]}),
    }
    figures = {}
    for name, config in configs.items():
        with checkpoint_daemon(config) as (daemon, work):
            turns = Turns(daemon, provider, work)
            try:
                turns.run(*_tool("read_file", path="a.txt"))  # warm-up
                samples = [turns.run(*_tool("read_file", path="a.txt")) for _ in range(turns_count)]
            finally:
                turns.close()
        # Wall: the median turn; CPU: the mean (one turn's CPU is near /proc's 10 ms tick).
        figures[name] = (statistics.median(s[0] for s in samples), sum(s[1] for s in samples) / turns_count)
    fired = len(seen.read_text().splitlines()) if seen.exists() else 0
    shutil.rmtree(seen.parent, ignore_errors=True)
    assert fired == turns_count + 1, f"the hook fired {fired} times for {turns_count + 1} read_file calls"
    base_wall, base_cpu = figures["no hooks"]
    print(f"hooks, a turn with one read_file call, {turns_count} turns each (wall: median; CPU: mean):")
    for name, (wall, cpu) in figures.items():
        print(f"  {name:<28} {wall * 1000:7.1f} ms wall ({(wall - base_wall) * 1000:+6.1f}), "
              f"{cpu * 1000:6.1f} ms daemon+hook CPU ({(cpu - base_cpu) * 1000:+6.1f})")


def learning(provider: ScriptedProviderProcess, turns_count: int) -> None:
    """A turn's latency with the learning loop's review due after every turn vs the loop off. The review's
    model answers only after ``REVIEW_LATENCY`` seconds: were the review on the turn's path, a turn would
    take at least that long."""
    slow = subprocess.Popen(
        [sys.executable, "-m", "providers.scripted", "--port", "0", "--rules", "--latency", str(REVIEW_LATENCY)],
        cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    assert slow.stdout is not None
    slow_url = slow.stdout.readline().strip()
    review = {"model": "review-model", "provider": "custom", "base_url": slow_url}
    configs = {
        "review off": json.dumps({"auxiliary": {"background_review": {"enabled": False}}}),
        "review due every turn": json.dumps({"memory": {"nudge_interval": 1}, "auxiliary": {"background_review": review}}),
    }
    figures = {}
    try:
        for name, config in configs.items():
            with checkpoint_daemon(config) as (daemon, work):
                turns = Turns(daemon, provider, work)
                try:
                    turns.run()  # warm-up (the rules answer: the message asks for no tools)
                    samples = [turns.run() for _ in range(turns_count)]
                finally:
                    turns.close()
            figures[name] = (statistics.median(s[0] for s in samples), bench_api._percentile([s[0] for s in samples], 0.95),
                             sum(s[1] for s in samples) / turns_count)
        with urllib.request.urlopen(f"{slow_url.removesuffix('/v1')}/_admin/requests", timeout=10) as response:
            reviews = len(json.loads(response.read())["requests"])
    finally:
        slow.terminate()
        slow.wait(10)
        slow.stdout.close()
    print(f"learning loop, {turns_count} turns each, the review's model answering after {REVIEW_LATENCY:.0f} s "
          f"({reviews} review requests made):")
    for name, (p50, p95, cpu) in figures.items():
        print(f"  {name:<22} turn p50 {p50 * 1000:7.1f} ms, p95 {p95 * 1000:7.1f} ms, daemon CPU per turn {cpu * 1000:5.1f} ms")


def import_hermes(reps: int) -> None:
    """``import-hermes`` of the committed fixture home into a new home."""
    walls, cpus = [], []
    for _ in range(reps):
        with tempfile.TemporaryDirectory(prefix="bench-import-") as tmp:
            hermes, home = Path(tmp) / "hermes", Path(tmp) / "home"
            shutil.copytree(FIXTURE, hermes)
            home.mkdir(mode=0o700)
            child, started = _children_cpu(), time.perf_counter()
            result = run_cli(home, "import-hermes", str(hermes), "--json", timeout=120)
            walls.append(time.perf_counter() - started)
            cpus.append(_children_cpu() - child)
            assert result.returncode == 0, result.stderr
    taken = json.loads(result.stdout)
    counts = ", ".join(f"{len(value)} {key}" for key, value in taken.items() if isinstance(value, list))
    print(f"import-hermes of tests/fixtures/hermes_0_19/home ({counts}), {reps} reps: {_ms(walls)} wall, {_ms(cpus)} CPU")


def export_html(provider: ScriptedProviderProcess, reviewer: ScriptedProviderProcess, messages: int, reps: int) -> None:
    """``sessions export --format html`` of a session of ``messages`` messages."""
    with checkpoint_daemon(with_reviewer(reviewer)) as (daemon, work):
        turns = Turns(daemon, provider, work)
        try:
            for n in range(messages // 2):
                turns.run({"text": f"Answer {n}: **bold**, `code`, a [link](https://example.com/{n}) and <b>tags</b>."})
        finally:
            turns.close()
        walls, cpus, size = [], [], 0
        for rep in range(reps):
            out = work / f"export{rep}.html"
            cpu, child, started = _daemon_cpu(turns.pid), _children_cpu(), time.perf_counter()
            result = run_cli(daemon.home, "sessions", "export", turns.session_id, "--format", "html", "-o", str(out), timeout=120)
            walls.append(time.perf_counter() - started)
            cpus.append(_daemon_cpu(turns.pid) - cpu + _children_cpu() - child)
            assert result.returncode == 0, result.stderr
            size = out.stat().st_size
    print(f"sessions export --format html, {messages} messages ({size // 1024} KB page), {reps} reps: "
          f"{_ms(walls)} wall, {_ms(cpus)} CPU (the CLI and the daemon)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--turns", type=int, default=30, help="turns per hook configuration")
    parser.add_argument("--messages", type=int, default=500)
    parser.add_argument("--only", default="checkpoints,hooks,learning,import,export")
    args = parser.parse_args()
    print(f"everyday features, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f} at start")
    with providers() as (provider, reviewer):
        parts: dict[str, Callable[[], None]] = {
            "checkpoints": lambda: checkpoints(provider, reviewer, args.reps),
            "hooks": lambda: hooks(provider, reviewer, args.turns),
            "learning": lambda: learning(provider, args.turns // 2),
            "import": lambda: import_hermes(args.reps + 2),
            "export": lambda: export_html(provider, reviewer, args.messages, args.reps + 2),
        }
        for name in args.only.split(","):
            parts[name]()
            sys.stdout.flush()
    print(f"load {os.getloadavg()[0]:.1f} at end")


if __name__ == "__main__":
    main()
