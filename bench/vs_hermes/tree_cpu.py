"""The CPU a program costs the machine: its process and every process it starts, however deep.

A process's own ticks miss its tools' processes, and ``RUSAGE_CHILDREN`` (``/proc/<pid>/stat``'s
``cutime``) counts only the children it has waited for, and theirs only where each waited in turn:
a jailed command's ``bash`` under ``bwrap``'s PID namespace init, or anything killed with its
namespace, is easily lost. So the program runs in a control group of its own, and its figure is the
group's whole usage (``cpu.stat``'s ``usage_usec`` on a version 2 hierarchy, ``cpuacct.usage`` on
version 1): every process forked inside stays in the group or a group below it, and both files
count the groups below. Making a group needs root (or a delegated hierarchy); where none can be made,
the figure falls back to ``/proc`` accounting of the process and its reaped children, and says so.

Standard library only: the Hermes driver imports it in Hermes's own venv.
"""

from __future__ import annotations

import contextlib
import os

__all__ = ["TreeCpu"]

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def _hierarchies() -> list[tuple[str, str]]:
    """(kind, where our own group of it is) for the version 2 hierarchy, then version 1's cpuacct."""
    own: dict[str, str] = {}
    with open("/proc/self/cgroup", encoding="ascii") as groups:
        for line in groups:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            for controller in controllers.split(",") if controllers else [""]:
                own[controller] = path
    found = []
    with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as info:
        for line in info:
            fields = line.split()
            dash = fields.index("-")
            fstype, options = fields[dash + 1], fields[dash + 3].split(",")
            root, point = fields[3], fields[4]
            if fstype == "cgroup2" and "" in own:
                found.append(("v2", os.path.join(point, os.path.relpath(own[""], root))))
            elif fstype == "cgroup" and "cpuacct" in options and "cpuacct" in own:
                found.append(("v1", os.path.join(point, os.path.relpath(own["cpuacct"], root))))
    found.sort(key=lambda item: item[0] != "v2")
    return found


class TreeCpu:
    """A control group of one's own, counting the CPU of every process moved into it and their descendants.

    Args:
        name: The group's name (made beside nothing else of ours; removed by :meth:`close`).

    Attributes:
        method: How :meth:`seconds` counts, for the report.
    """

    def __init__(self, name: str) -> None:
        self._group: str | None = None
        self._kind = ""
        self._pid = 0
        for kind, parent in _hierarchies():
            group = os.path.join(parent, name)
            usage = "cpu.stat" if kind == "v2" else "cpuacct.usage"
            try:
                os.makedirs(group, exist_ok=True)
                if not os.path.exists(os.path.join(group, usage)):
                    os.rmdir(group)
                    continue
            except OSError:
                continue
            self._group, self._kind = group, kind
            break
        self.method = (
            f"control group {self._kind} ({'cpu.stat usage_usec' if self._kind == 'v2' else 'cpuacct.usage'}): "
            "the process and every descendant"
            if self._group else
            "/proc: the process and the children it reaped (no control group could be made; grandchildren "
            "lost where their parent did not wait)"
        )

    def enter(self) -> None:
        """Move this process into the group (its later children are born there) and count it.

        Safe in a ``preexec_fn``: the child moves itself before it runs the program; its parent then
        calls :meth:`follow` with the child's pid.
        """
        self._pid = os.getpid()
        if self._group is not None:
            fd = os.open(os.path.join(self._group, "cgroup.procs"), os.O_WRONLY)
            try:
                os.write(fd, b"0")
            finally:
                os.close(fd)

    def follow(self, pid: int) -> None:
        """Count process ``pid`` (which :meth:`enter` ed the group in a ``preexec_fn``) where there is no group."""
        self._pid = pid

    def seconds(self) -> float:
        """CPU seconds (user + system) so far."""
        if self._group is None:
            try:
                with open(f"/proc/{self._pid}/stat", encoding="ascii") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
            except OSError:
                return 0.0
            return sum(int(field) for field in fields[11:15]) / CLOCK_TICKS
        if self._kind == "v2":
            with open(os.path.join(self._group, "cpu.stat"), encoding="ascii") as stat:
                for line in stat:
                    key, value = line.split()
                    if key == "usage_usec":
                        return int(value) / 1e6
            return 0.0
        with open(os.path.join(self._group, "cpuacct.usage"), encoding="ascii") as usage:
            return int(usage.read()) / 1e9

    def leave(self) -> None:
        """Move this process back to the group it came from, and remove ours (what it started has ended)."""
        if self._group is not None:
            with contextlib.suppress(OSError):
                fd = os.open(os.path.join(os.path.dirname(self._group), "cgroup.procs"), os.O_WRONLY)
                try:
                    os.write(fd, b"0")
                finally:
                    os.close(fd)
        self.close()

    def close(self) -> None:
        """Remove the group (and the empty groups a program left under it), once its processes are gone."""
        if self._group is None:
            return
        for directory, _, _ in sorted(os.walk(self._group), key=lambda item: -item[0].count("/")):
            with contextlib.suppress(OSError):
                os.rmdir(directory)
