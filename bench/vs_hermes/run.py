"""Hermes Agent 0.19.0 and hermes-actors side by side, on this machine, against one fake model.

Run: .venv/bin/python bench/vs_hermes/run.py [--rounds 3] [--quick] [--only turns,interrupt,...] [--pin 0]

As users run both: unpinned, hermes-actors with its default config (tools jailed, ``workspace-write``;
``--sandbox`` picks another mode), the fake model answering with ``TCP_NODELAY``. ``--pin CPUS`` adds a
column with both programs pinned by ``taskset`` (the fake model stays unpinned). ``--base TREE`` also runs
the hermes-actors of another worktree (``git worktree add /tmp/base main``), with this tree's drivers:
before and after in the same run.

On first use it makes ``bench/vs_hermes/.venv-hermes`` with ``hermes-agent==0.19.0`` from PyPI
(``--hermes-venv`` names another). It starts ``fake_model.py`` (its own process, 50 ms before each
reply), then runs every workload on both programs alternately (who goes first alternates by round),
each program in its own process with the same environment. It prints the environment and one table
of medians: ratio is hermes-actors' advantage (above 1: ahead). CPU per turn counts the program's
whole process tree, its tools' processes included (each driver says how: :mod:`tree_cpu`). A run in
which a conversation failed, or the server could not answer a request, is marked FAILED and its
figures are not used.
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


def hermes_python(venv: Path = HERMES_VENV) -> Path:
    """The Hermes venv's interpreter, made on first use."""
    python = venv / "bin" / "python"
    if not python.exists():
        print(f"creating {venv} with hermes-agent=={HERMES_VERSION} ...", file=sys.stderr, flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
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

    def cpu_seconds(self) -> float:
        """The server's CPU so far (it starts no processes)."""
        with open(f"/proc/{self.process.pid}/stat", encoding="ascii") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

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

    def __init__(self, server: FakeModel, env: dict[str, str], work: Path, hermes: Path, base: Path | None) -> None:
        self.server = server
        self.env = env
        self.work = work
        self.hermes = hermes
        self.base = base
        self.failures: list[str] = []

    def run(self, program: str, workload: str, *args: str, pin: str = "") -> dict[str, Any] | None:
        """One driver run (``pin``: under ``taskset -c pin``); its figures plus the server's, or None when
        anything in it failed."""
        if program == "hermes":
            command = [str(self.hermes), str(HERE / "drive_hermes.py")]
        elif program == "base":
            command = [str(OURS), str(HERE / "drive_actors.py"), "--root", str(self.base)]
        else:
            command = [str(OURS), str(HERE / "drive_actors.py")]
        if pin:
            command = ["taskset", "-c", pin, *command]
        self.server.reset()
        model_cpu = self.server.cpu_seconds()
        done = subprocess.run([*command, workload, "--url", self.server.url, *args], env=self.env, cwd=self.work,
                              capture_output=True, text=True, timeout=1800)
        model_cpu = self.server.cpu_seconds() - model_cpu
        stats = self.server.stats()
        label = f"{program} {workload} {' '.join(args)}{f' pinned to {pin}' if pin else ''}"
        if done.returncode != 0:
            self.failures.append(f"FAILED {label}: exit {done.returncode}: {done.stderr.strip()[-800:]}")
            return None
        out = json.loads(done.stdout.strip().splitlines()[-1])
        out["requests"], out["server_errors"] = stats["requests"], stats["errors"]
        out["code_results"] = stats["code_results"]
        out["model_cpu_s"] = model_cpu
        if out.get("failed") or stats["errors"] or out.get("conversations_ok", 1) == 0:
            self.failures.append(f"FAILED {label}: {out}")
            return None
        print(f"  {label}: {json.dumps(out)}", file=sys.stderr, flush=True)
        return out


def rows(quick: bool, code_paths: dict[str, Path]) -> list[Row]:
    """(name, workload, figure from a run, higher is better, driver arguments)."""
    big = ["--sessions", "50" if quick else "200", "--turns", "3" if quick else "5"]
    mid = ["--sessions", "20" if quick else "50", "--turns", "3" if quick else "5"]
    per_turn_cpu = lambda r: r["cpu_s"] / r["turns"] * 1000  # noqa: E731
    per_turn_tree = lambda r: r["tree_cpu_s"] / r["turns"] * 1000  # noqa: E731
    per_turn_model = lambda r: r["model_cpu_s"] / r["turns"] * 1000  # noqa: E731
    turns_per_s = lambda r: r["turns"] / r["wall_s"]  # noqa: E731
    return [
        (f"{big[1]} sessions x {big[3]} turns (one terminal true each), turns/s", "turns", turns_per_s, True, big),
        ("same, CPU per turn (ms): the program and every process its tools started", "turns", per_turn_tree, False,
         big),
        ("same, CPU per turn (ms): the program's own processes", "turns", per_turn_cpu, False, big),
        ("same, the fake model's CPU per turn (ms; not the program's)", "turns", per_turn_model, False, big),
        (f"{mid[1]} sessions x {mid[3]} turns, turns/s", "turns", turns_per_s, True, mid),
        ("same, CPU per turn (ms): the program and every process its tools started", "turns", per_turn_tree, False,
         mid),
        ("interrupt while a command runs -> turn returned (ms)", "interrupt", lambda r: r["interrupt_ms"], False,
         ["--rounds", "3"]),
        ("idle session: RSS each (KB)", "idle", lambda r: r["rss_kb_each"], False, ["--sessions", "100"]),
        ("idle session: CPU to create (ms)", "idle", lambda r: r["create_ms_each"], False, ["--sessions", "100"]),
        ("streamed answer, 20 chunks 20 ms apart: message -> first token (ms)", "stream",
         lambda r: r["first_token_ms"], False, ["--rounds", "3"]),
        *code_rows(code_paths),
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
    parser.add_argument("--sandbox", default="default",
                        help="hermes-actors' sandbox.mode (default: its default config's, workspace-write; Hermes has "
                             "no jail)")
    parser.add_argument("--only", default="", help="comma-separated workloads: turns,interrupt,idle,code,stream")
    parser.add_argument("--pin", default="", help="also run every row with both programs under taskset -c PIN")
    parser.add_argument("--hermes-venv", type=Path, default=HERMES_VENV, help="a venv with hermes-agent==0.19.0")
    parser.add_argument("--base", type=Path, default=None, help="another hermes-actors worktree to run as well (before)")
    args = parser.parse_args()
    hermes = hermes_python(args.hermes_venv)
    server = FakeModel(args.latency)
    try:
        with tempfile.TemporaryDirectory(prefix="vs-hermes-") as tmp:
            work = Path(tmp)
            code_paths = prepare(work)
            env = environment(work)
            bench = Bench(server, env, work, hermes, args.base)
            wanted = set(filter(None, args.only.split(",")))
            table = [row for row in rows(args.quick, code_paths) if not wanted or row[1] in wanted]
            samples: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
            for round_ in range(args.rounds):
                order = ("hermes", *(("base",) if args.base else ()), "actors")
                order = order if round_ % 2 == 0 else order[::-1]
                for runs in sorted({(row[1], tuple(row[4])) for row in table}):
                    for pin in ("", args.pin) if args.pin else ("",):
                        for program in order:
                            extra = ["--sandbox", args.sandbox] if program != "hermes" else []
                            out = bench.run(program, runs[0], *runs[1], *extra, pin=pin)
                            if out is not None:
                                samples.setdefault((program, f"{runs[0]} {runs[1]}", pin), []).append(out)
            report(table, samples, describe(env), bench.failures, args)
    finally:
        server.stop()


def report(table: list[Row], samples: dict[tuple[str, str, str], list[dict[str, Any]]], env: list[str],
           failures: list[str], args: argparse.Namespace) -> None:
    """The environment, the ratio table (unpinned, and pinned where asked; the base tree beside this one
    where asked) and the failed runs."""
    print(f"# hermes-actors vs Hermes Agent {HERMES_VERSION}: {args.rounds} alternating rounds, medians; "
          f"fake model latency {args.latency * 1000:.0f} ms; hermes-actors sandbox.mode={args.sandbox}; unpinned"
          + (f", and pinned to CPU {args.pin} (taskset; the fake model unpinned)" if args.pin else ""))
    for line in env:
        print(f"- {line}")
    for label, tree in (("hermes-actors", ROOT), *((("base", args.base),) if args.base else ())):
        print(f"- {label}: {tree} at {_commit(tree)}")
    methods = {r["tree_cpu_method"] for runs in samples.values() for r in runs if "tree_cpu_method" in r}
    for method in sorted(methods):
        print(f"- process-tree CPU counted by {method}")
    print()
    programs = ("base", "actors") if args.base else ("actors",)
    names = {"base": "base", "actors": "hermes-actors"}
    head = ["workload"]
    for pin in ("", args.pin) if args.pin else ("",):
        prefix = f"pinned {pin}: " if pin else ""
        head += [f"{prefix}Hermes 0.19", *(cell for p in programs for cell in (f"{prefix}{names[p]}", "ratio"))]
    print("| " + " | ".join([*head, "requests (H / a)"]) + " |")
    print("| --- " * (len(head) + 1) + "|")
    for name, workload, figure, higher, driver_args in table:
        key = f"{workload} {tuple(driver_args)}"
        cells, requests = [name], ""
        for pin in ("", args.pin) if args.pin else ("",):
            hermes = samples.get(("hermes", key, pin), [])
            h = statistics.median(figure(r) for r in hermes) if hermes else None
            cells.append("-" if h is None else f"{h:,.2f}")
            for program in programs:
                ours = samples.get((program, key, pin), [])
                if not ours or h is None:
                    cells += ["-" if not ours else "", "no ratio: runs failed"]
                    continue
                a = statistics.median(figure(r) for r in ours)
                cells += [f"{a:,.2f}", f"{a / h if higher else h / a:.2f}x"]
                if not pin and program == "actors":
                    requests = (f"{statistics.median(r['requests'] for r in hermes):.0f} / "
                                f"{statistics.median(r['requests'] for r in ours):.0f}")
        print("| " + " | ".join([*cells, requests]) + " |")
    for failure in failures:
        print(f"\n{failure}")


def _commit(tree: Path) -> str:
    """The commit checked out in ``tree`` (with ``+changes`` when its files differ from it)."""
    head = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", str(tree), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True)
    return head.stdout.strip() + ("+changes" if dirty.stdout.strip() else "")


if __name__ == "__main__":
    main()
