"""Hermes Agent 0.19.0 and hermes-actors side by side, on this machine, against one fake model.

Run: .venv/bin/python bench/vs_hermes/run.py [--rounds 3] [--quick] [--only turns,interrupt,...]

On first use it makes ``bench/vs_hermes/.venv-hermes`` with ``hermes-agent==0.19.0`` from PyPI. It
starts ``fake_model.py`` (its own process, 50 ms before each reply), then runs every workload on both
programs alternately (who goes first alternates by round), each program in its own process with the
same environment. It prints the environment and one table of medians: ratio is hermes-actors'
advantage (above 1: ahead). A run in which a conversation failed, or the server could not answer a
request, is marked FAILED and its figures are not used.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path
from typing import Any

from code_calls import Row, code_rows, prepare

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
HERMES_VENV = HERE / ".venv-hermes"
HERMES_VERSION = "0.19.0"
OURS = ROOT / ".venv" / "bin" / "python"
# Variables that change how either program runs (Hermes's figures move 2-30x with the CA ones).
RECORDED = ("SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY",
            "PYTHONPATH", "PYTHONDONTWRITEBYTECODE", "OPENAI_API_KEY", "OPENROUTER_API_KEY")


def hermes_python() -> Path:
    """The Hermes venv's interpreter, made on first use."""
    python = HERMES_VENV / "bin" / "python"
    if not python.exists():
        print(f"creating {HERMES_VENV} with hermes-agent=={HERMES_VERSION} ...", file=sys.stderr, flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(HERMES_VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", f"hermes-agent=={HERMES_VERSION}"], check=True)
    return python


class FakeModel:
    """The fake model server process."""

    def __init__(self, latency: float) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(HERE / "fake_model.py"), "--latency", str(latency)], stdout=subprocess.PIPE, text=True,
        )
        assert self.process.stdout is not None
        self.url = self.process.stdout.readline().strip()
        self._root = self.url.removesuffix("/v1")

    def reset(self) -> None:
        """Forget the previous run's counts."""
        urllib.request.urlopen(urllib.request.Request(self._root + "/reset", data=b"{}"), timeout=10).read()

    def stats(self) -> dict[str, Any]:
        """Requests served, requests it could not answer, and the execute_code scripts' figures."""
        with urllib.request.urlopen(self._root + "/stats", timeout=10) as reply:
            return json.loads(reply.read())

    def stop(self) -> None:
        """Stop the server."""
        self.process.terminate()
        self.process.wait()


class Bench:
    """Runs drivers and keeps every sample."""

    def __init__(self, server: FakeModel, env: dict[str, str], work: Path) -> None:
        self.server = server
        self.env = env
        self.work = work
        self.failures: list[str] = []

    def run(self, program: str, workload: str, *args: str) -> dict[str, Any] | None:
        """One driver run; its figures plus the server's, or None when anything in it failed."""
        if program == "hermes":
            command = [str(hermes_python()), str(HERE / "drive_hermes.py")]
        else:
            command = [str(OURS), str(HERE / "drive_actors.py")]
        self.server.reset()
        done = subprocess.run([*command, workload, "--url", self.server.url, *args], env=self.env, cwd=self.work,
                              capture_output=True, text=True, timeout=1800)
        stats = self.server.stats()
        label = f"{program} {workload} {' '.join(args)}"
        if done.returncode != 0:
            self.failures.append(f"FAILED {label}: exit {done.returncode}: {done.stderr.strip()[-800:]}")
            return None
        out = json.loads(done.stdout.strip().splitlines()[-1])
        out["requests"], out["server_errors"] = stats["requests"], stats["errors"]
        out["code_results"] = stats["code_results"]
        if out.get("failed") or stats["errors"] or out.get("conversations_ok", 1) == 0:
            self.failures.append(f"FAILED {label}: {out}")
            return None
        print(f"  {label}: {json.dumps(out)}", file=sys.stderr, flush=True)
        return out


def rows(quick: bool, code_paths: dict[str, Path], pinned: bool) -> list[Row]:
    """(name, workload, figure from a run, higher is better, driver arguments)."""
    big = ["--sessions", "50" if quick else "200", "--turns", "3" if quick else "5"]
    mid = ["--sessions", "20" if quick else "50", "--turns", "3" if quick else "5"]
    per_turn_cpu = lambda r: r["cpu_s"] / r["turns"] * 1000  # noqa: E731
    turns_per_s = lambda r: r["turns"] / r["wall_s"]  # noqa: E731
    return [
        (f"{big[1]} sessions x {big[3]} turns (one terminal true each), turns/s", "turns", turns_per_s, True, big),
        ("same, CPU per turn (ms, the program's process)", "turns", per_turn_cpu, False, big),
        (f"{mid[1]} sessions x {mid[3]} turns, turns/s", "turns", turns_per_s, True, mid),
        ("interrupt while a command runs -> turn returned (ms)", "interrupt", lambda r: r["interrupt_ms"], False,
         ["--rounds", "3"]),
        ("idle session: RSS each (KB)", "idle", lambda r: r["rss_kb_each"], False, ["--sessions", "100"]),
        ("idle session: CPU to create (ms)", "idle", lambda r: r["create_ms_each"], False, ["--sessions", "100"]),
        ("streamed answer, 20 chunks 20 ms apart: message -> first token (ms)", "stream",
         lambda r: r["first_token_ms"], False, ["--rounds", "3"]),
        *code_rows(code_paths, pinned=pinned),
    ]


def environment(work: Path) -> dict[str, str]:
    """The one environment both programs run in (plus each one's home, set by its driver)."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("HERMES", "VIRTUAL_ENV"))}
    env["HERMES_HOME"] = str(work / "hermes-home")  # Hermes's own home: never the user's ~/.hermes
    env["TERMINAL_CWD"] = str(work)  # where Hermes's terminal runs (hermes-actors: its session's cwd)
    (work / "hermes-home").mkdir(exist_ok=True)
    return env


def describe(env: dict[str, str]) -> list[str]:
    """What the results depend on."""
    lines = [f"machine: {platform.machine()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}; "
             f"Python {platform.python_version()}; hermes-agent {HERMES_VERSION}"]
    lines += [f"{key}={env[key]!r}" if key in env else f"{key} unset" for key in RECORDED]
    return lines


def main() -> None:
    """Run every workload alternately on both programs and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="smaller sizes (about two minutes)")
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--sandbox", default="full-access", help="hermes-actors' sandbox.mode (Hermes has no jail)")
    parser.add_argument("--only", default="", help="comma-separated workloads: turns,interrupt,idle,code,stream")
    parser.add_argument("--pinned", action="store_true", help="also run the execute_code rows pinned to core 0")
    args = parser.parse_args()
    hermes_python()
    server = FakeModel(args.latency)
    try:
        with tempfile.TemporaryDirectory(prefix="vs-hermes-") as tmp:
            work = Path(tmp)
            code_paths = prepare(work)
            env = environment(work)
            bench = Bench(server, env, work)
            wanted = set(filter(None, args.only.split(",")))
            table = [row for row in rows(args.quick, code_paths, args.pinned) if not wanted or row[1] in wanted]
            samples: dict[tuple[str, str], list[dict[str, Any]]] = {}
            for round_ in range(args.rounds):
                order = ("hermes", "actors") if round_ % 2 == 0 else ("actors", "hermes")
                for runs in {(row[1], tuple(row[4])) for row in table}:
                    for program in order:
                        extra = ["--sandbox", args.sandbox] if program == "actors" else []
                        out = bench.run(program, runs[0], *runs[1], *extra)
                        if out is not None:
                            samples.setdefault((program, f"{runs[0]} {runs[1]}"), []).append(out)
            report(table, samples, describe(env), bench.failures, args)
    finally:
        server.stop()


def report(table: list[Row], samples: dict[tuple[str, str], list[dict[str, Any]]], env: list[str],
           failures: list[str], args: argparse.Namespace) -> None:
    """The environment, the ratio table and the failed runs."""
    print(f"# hermes-actors vs Hermes Agent {HERMES_VERSION}: {args.rounds} alternating rounds, medians; "
          f"fake model latency {args.latency * 1000:.0f} ms; hermes-actors sandbox.mode={args.sandbox}")
    for line in env:
        print(f"- {line}")
    print()
    print("| workload | Hermes 0.19 | hermes-actors | ratio | requests (H / a) |")
    print("| --- | --- | --- | --- | --- |")
    for name, workload, figure, higher, driver_args in table:
        key = f"{workload} {tuple(driver_args)}"
        hermes, ours = samples.get(("hermes", key), []), samples.get(("actors", key), [])
        if not hermes or not ours:
            print(f"| {name} | {'-' if not hermes else ''} | {'-' if not ours else ''} | no ratio: runs failed | |")
            continue
        h, a = statistics.median(figure(r) for r in hermes), statistics.median(figure(r) for r in ours)
        ratio = a / h if higher else h / a
        requests = f"{statistics.median(r['requests'] for r in hermes):.0f} / {statistics.median(r['requests'] for r in ours):.0f}"
        print(f"| {name} | {h:,.2f} | {a:,.2f} | {ratio:.2f}x | {requests} |")
    for failure in failures:
        print(f"\n{failure}")


if __name__ == "__main__":
    main()
