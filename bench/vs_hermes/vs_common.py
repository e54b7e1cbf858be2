"""What both drivers share (standard library only: the Hermes driver runs in Hermes's own venv).

The command line of one workload (``--pin``: this process and all it starts on core 0), a process's resident memory, and whether a process runs a
``sleep 30`` among its descendants (the interrupt workload's command has started).
"""

from __future__ import annotations

import argparse
import os

WORKLOADS = ("turns", "interrupt", "idle", "code", "stream")


def parse_args(sandbox: bool = False) -> argparse.Namespace:
    """One workload and its sizes; ``sandbox`` adds hermes-actors' ``--sandbox`` mode."""
    parser = argparse.ArgumentParser()
    parser.add_argument("workload", choices=WORKLOADS)
    parser.add_argument("--url", required=True)
    if sandbox:
        parser.add_argument("--sandbox", default="default", help="sandbox.mode; default: the default config's")
        parser.add_argument("--hosts", default="1", help="daemon.hosts: N or auto")
        parser.add_argument("--root", default="", help="the hermes-actors tree whose daemon runs (default: this one)")
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--kind", default="refused")
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--path", default="")
    parser.add_argument("--chunks", type=int, default=20)
    parser.add_argument("--gap", type=float, default=20)
    parser.add_argument("--pin", action="store_true", help="run on core 0 (with every process started after)")
    args = parser.parse_args()
    if args.pin:
        os.sched_setaffinity(0, {0})
    return args


def rss_kb(pid: int | str = "self") -> int:
    """The resident set of process ``pid``."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def sleeping_descendant(root: int) -> bool:
    """Whether a ``sleep 30`` runs among the descendants of process ``root``."""
    parents: dict[str, str] = {}
    sleepers = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as handle:
                parents[pid] = handle.read().rsplit(")", 1)[1].split()[1]
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                if handle.read().startswith(b"sleep\x0030"):
                    sleepers.append(pid)
        except OSError:
            continue
    for pid in sleepers:
        while pid in parents and pid not in ("0", "1"):
            if pid == str(root):
                return True
            pid = parents[pid]
    return False
