"""Control groups: one per session, holding every process its tools start, with the session's limits.

Layout, under the daemon's own group in each hierarchy (``/proc/self/cgroup``)::

    <daemon's group>/hermes-actors-<daemon pid>/   made at start; stale ones of dead daemons removed
    └── s-<session id>/                           pids.max, memory limit, cpu weight; removed at close

The daemon comes before the commands it started when both want the CPU
(docs/DECISIONS.md#d-daemon-before-tools): the ``cpu`` controller's ``hermes-actors-<pid>`` holds every
session's processes at ``sandbox.tools_cpu_weight`` (a tenth by default) against the daemon's 100, so the
event loop that serves every session runs first, while commands on an otherwise idle machine still get every
core. Measured at 200 busy sessions on 2 cores, the loop waited for a core 1.1–1.4 s of a 6 s run at equal
weights and 0.5–0.9 s at a tenth. The weight is only given where the daemon's process is the group's sibling,
never against other programs (which would starve the tools behind them): under version 2 the daemon sits in
its leaf beside it (below); under version 1, whose groups may hold processes, the daemon moves into a group of
its own that the sessions' group is made in, weighted as the daemon and its tools were together (200)::

    <daemon's cpu group>/hermes-actors-<pid>/      the daemon's process; moved back out at close
    └── sessions/                                  every session's cpu group, at the tools' weight
        └── s-<session id>/

A session host (``daemon.hosts``), born in its daemon's group, makes its own beside the daemon's.

Version 1 (a hierarchy per controller, as this project's CI machines mount them) and version 2 (one
unified hierarchy) are both used, controller by controller: whichever hierarchy has the controller.
Version 2 forbids a group with processes to hand controllers to its children, so where the daemon's own
group has processes the daemon moves itself into a leaf ``hermes-actors-daemon`` beside its sessions (as a
systemd unit with ``Delegate=yes`` expects); where that is not allowed either, the controller is not used
and the launcher falls back to resource limits (:mod:`tools.jail.limits`).

Everything here blocks (it is file-system work): call it from a worker or the spawn threads.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import signal
import time

import attrs

from config.sandbox import SandboxLimits

__all__ = ["CONTROLLERS", "CgroupTree", "SessionCgroup", "find_cgroups"]

log = logging.getLogger(__name__)

CONTROLLERS = ("pids", "memory", "cpu")
"""The controllers a session's limits use."""

_PREFIX = "hermes-actors-"
_DAEMON_LEAF = "hermes-actors-daemon"
_V1_SESSIONS = "sessions"
# The cpu weight of the daemon's own process, and under version 1 of its group (the daemon and its tools,
# as much as the two had beside each other before the daemon moved in).
_DAEMON_WEIGHT = 100
_V1_UNIT_WEIGHT = 2 * _DAEMON_WEIGHT
# How long removing a group waits for its killed processes to be reaped (they are SIGKILLed: milliseconds).
_REMOVE_SECONDS = 5.0


def _write(path: str, value: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, value.encode())
    finally:
        os.close(fd)


def _read(path: str) -> str:
    with open(path, encoding="ascii") as file:
        return file.read()


def _unescape(field: str) -> str:
    # mountinfo escapes space, tab, newline and backslash as octal.
    for code, char in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        field = field.replace(code, char)
    return field


def _mounts() -> list[tuple[str, str, str, set[str]]]:
    """Every cgroup mount: (its root in the hierarchy, where it is mounted, version, controllers)."""
    found = []
    with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as info:
        for line in info:
            fields = line.split()
            dash = fields.index("-")
            fstype, options = fields[dash + 1], set(fields[dash + 3].split(","))
            if fstype in ("cgroup", "cgroup2"):
                found.append((_unescape(fields[3]), _unescape(fields[4]), fstype, options))
    return found


def _own_groups() -> dict[str, str]:
    """This process's group per v1 controller, and under ``""`` its unified (v2) group."""
    groups: dict[str, str] = {}
    for line in _read("/proc/self/cgroup").splitlines():
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(",") if controllers else [""]:
            groups[controller] = path
    return groups


def _host_path(mount_root: str, mount_point: str, group: str) -> str | None:
    """Where ``group`` of a hierarchy is on this file system, None when the mount does not show it."""
    if group != mount_root and not group.startswith(mount_root.rstrip("/") + "/"):
        return None
    return os.path.normpath(os.path.join(mount_point, os.path.relpath(group, mount_root)))


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _kill_all(directory: str) -> None:
    """SIGKILL every process in a group (and its children) until it is empty; v2's cgroup.kill when there."""
    kill = os.path.join(directory, "cgroup.kill")
    if os.path.exists(kill):
        with contextlib.suppress(OSError):
            _write(kill, "1")
    try:
        pids = [int(p) for p in _read(os.path.join(directory, "cgroup.procs")).split()]
    except OSError:
        return
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _remove_tree(directory: str) -> None:
    """Kill what runs in a group and its children, then remove them, deepest first."""
    for root, dirs, _ in os.walk(directory, topdown=False):
        for name in dirs:
            _remove_group(os.path.join(root, name))
    _remove_group(directory)


def _remove_group(directory: str) -> None:
    deadline = time.monotonic() + _REMOVE_SECONDS
    while True:
        _kill_all(directory)
        try:
            os.rmdir(directory)
            return
        except FileNotFoundError:
            return
        except OSError as exc:
            if exc.errno != errno.EBUSY:
                log.warning("cannot remove the control group %s: %s", directory, exc.strerror)
                return
        if time.monotonic() > deadline:
            log.warning("the control group %s still has processes; left in place", directory)
            return
        # A killed process leaves its group once it is reaped: give its parent a moment.
        time.sleep(0.005)


def _enable_controllers(group: str, wanted: list[str]) -> list[str]:
    """Hand ``wanted`` v2 controllers to ``group``'s children; the ones that could be handed."""
    enabled = []
    for controller in wanted:
        try:
            _write(os.path.join(group, "cgroup.subtree_control"), f"+{controller}")
            enabled.append(controller)
        except OSError:
            continue
    return enabled


@attrs.frozen
class CgroupTree:
    """The daemon's groups: where each controller's session groups are made.

    Attributes:
        groups: Per controller, the daemon's directory (``…/hermes-actors-<pid>``) to make session groups in.
        versions: Per controller, ``1`` or ``2``.
        problems: Why a controller is not used, for the status.
        moved: Under version 1, the daemon's own ``cpu`` group and the one it moved into (the sessions'
            groups' parent's parent), to move back at :meth:`close`; None when it did not move.
        tools_cpu_weight: The weight every session's processes together have against the daemon's 100;
            None where the daemon could not be their sibling (they share the CPU with it as equals).
    """

    groups: dict[str, str]
    versions: dict[str, int]
    problems: dict[str, str]
    moved: tuple[str, str] | None = None
    tools_cpu_weight: int | None = None

    def mechanism(self, controller: str) -> str | None:
        """``cgroup v1``/``cgroup v2`` when ``controller`` is used, else None."""
        version = self.versions.get(controller)
        return None if version is None else f"cgroup v{version}"

    def open_session(self, session_id: str, limits: SandboxLimits) -> SessionCgroup | None:
        """Make a session's groups with its limits written; None when no controller is used.

        Raises:
            OSError: a group could not be made or a limit written.
        """
        if not self.groups:
            return None
        directories: dict[str, str] = {}
        try:
            for controller, parent in self.groups.items():
                directory = directories.get(parent) or os.path.join(parent, f"s-{session_id}")
                if parent not in directories:
                    os.makedirs(directory, exist_ok=True)
                directories[parent] = directory
                _write_limit(directory, controller, self.versions[controller], limits)
        except OSError:
            for directory in directories.values():
                _remove_group(directory)
            raise
        by_controller = {controller: directories[parent] for controller, parent in self.groups.items()}
        return SessionCgroup(by_controller, {c: self.versions[c] for c in by_controller}, limits)

    def close(self) -> None:
        """Remove the daemon's groups (every session's is gone by now), the daemon and what it started
        outside a jail moved back to its own group first."""
        directories = set(self.groups.values())
        if self.moved is not None:
            home, unit = self.moved
            if _move_all(unit, home):
                directories.add(unit)
        for directory in directories:
            _remove_tree(directory)


def _move_all(source: str, target: str) -> bool:
    """Move the daemon, then every other process of ``source`` itself (not of its children), to ``target``;
    whether the daemon left (a failure is logged)."""
    try:
        _write(os.path.join(target, "cgroup.procs"), str(os.getpid()))
    except OSError as exc:
        log.warning("cannot move the daemon back to its control group %s (%s); %s stays", target, exc.strerror, source)
        return False
    with contextlib.suppress(OSError):
        for pid in _read(os.path.join(source, "cgroup.procs")).split():
            with contextlib.suppress(OSError):
                _write(os.path.join(target, "cgroup.procs"), pid)
    return True


def _write_limit(directory: str, controller: str, version: int, limits: SandboxLimits) -> None:
    memory = str(limits.memory_mb * 1024 * 1024)
    if controller == "pids":
        _write(os.path.join(directory, "pids.max"), str(limits.pids))
    elif controller == "memory" and version == 1:
        _write(os.path.join(directory, "memory.limit_in_bytes"), memory)
        # With swap accounting, swap would be a way around the limit.
        swap = os.path.join(directory, "memory.memsw.limit_in_bytes")
        if os.path.exists(swap):
            _write(swap, memory)
    elif controller == "memory":
        _write(os.path.join(directory, "memory.max"), memory)
        swap = os.path.join(directory, "memory.swap.max")
        if os.path.exists(swap):
            _write(swap, "0")
    else:
        _write_cpu_weight(directory, version, limits.cpu_weight)


def _write_cpu_weight(directory: str, version: int, weight: int) -> None:
    if version == 1:
        # cpu.shares: 1024 is the default share, as cpu.weight 100 is.
        _write(os.path.join(directory, "cpu.shares"), str(max(2, weight * 1024 // 100)))
    else:
        _write(os.path.join(directory, "cpu.weight"), str(weight))


@attrs.frozen
class SessionCgroup:
    """One session's groups: where its processes are put, and what the kernel counted of its limits.

    Attributes:
        directories: Per controller, the session's group.
        versions: Per controller, the hierarchy's version.
        limits: The limits written.
    """

    directories: dict[str, str]
    versions: dict[str, int]
    limits: SandboxLimits
    # Invariant: what counters() had counted when new_events() last looked (only it touches this).
    _seen: dict[str, int] = attrs.field(factory=dict, init=False, eq=False)

    @property
    def procs_files(self) -> tuple[str, ...]:
        """The ``cgroup.procs`` files a new process's pid is written to (one per distinct group)."""
        return tuple(os.path.join(d, "cgroup.procs") for d in sorted(set(self.directories.values())))

    def place(self, *pids: int) -> None:
        """Put ``pids`` (with the children they make from now on) in the session's groups.

        Raises:
            OSError: the kernel refused.
        """
        for path in self.procs_files:
            for pid in pids:
                _write(path, str(pid))

    def counters(self) -> dict[str, int]:
        """How often the kernel enforced a limit so far: ``pids`` (forks refused), ``memory`` (OOM kills)."""
        found: dict[str, int] = {}
        if "pids" in self.directories:
            found["pids"] = _counter(os.path.join(self.directories["pids"], "pids.events"), "max")
        if "memory" in self.directories:
            directory = self.directories["memory"]
            events = "memory.oom_control" if self.versions["memory"] == 1 else "memory.events"
            found["memory"] = _counter(os.path.join(directory, events), "oom_kill")
        return found

    def new_events(self) -> dict[str, int]:
        """The limits the kernel enforced since the last call, with how often (``pids``, ``memory``)."""
        counted = self.counters()
        new = {name: count - self._seen.get(name, 0) for name, count in counted.items()}
        self._seen.update(counted)
        return {name: times for name, times in new.items() if times > 0}

    def remove(self) -> None:
        """Kill whatever still runs in the session's groups and remove them."""
        for directory in set(self.directories.values()):
            _remove_tree(directory)


def _counter(path: str, key: str) -> int:
    try:
        for line in _read(path).splitlines():
            name, _, value = line.partition(" ")
            if name == key:
                return int(value)
    except (OSError, ValueError):
        pass
    return 0


def _v1_groups(mounts: list[tuple[str, str, str, set[str]]], own: dict[str, str]) -> dict[str, str]:
    """Per v1 controller, the daemon's own group on disk."""
    found = {}
    for root, point, fstype, options in mounts:
        if fstype != "cgroup":
            continue
        for controller in CONTROLLERS:
            if controller in options and controller not in found and controller in own:
                path = _host_path(root, point, own[controller])
                if path is not None:
                    found[controller] = path
    return found


def _v2_group(mounts: list[tuple[str, str, str, set[str]]], own: dict[str, str]) -> str | None:
    for root, point, fstype, _ in mounts:
        if fstype == "cgroup2" and "" in own:
            return _host_path(root, point, own[""])
    return None


def _clean_stale(parent: str) -> None:
    """Remove the groups that daemons which died without closing left in ``parent``."""
    with contextlib.suppress(OSError), os.scandir(parent) as entries:
        for entry in entries:
            suffix = entry.name[len(_PREFIX) :]
            if entry.name.startswith(_PREFIX) and suffix.isdigit() and entry.is_dir() and not _pid_alive(int(suffix)):
                log.info("removing the control groups of an earlier daemon (pid %s)", suffix)
                _remove_tree(entry.path)


def _v2_parent(own: str, wanted: list[str]) -> tuple[list[str], str | None, bool]:
    """Make v2's ``own`` hand ``wanted`` to its children; (handed, why not all were, whether the daemon
    moved into its leaf beside the sessions' group)."""
    available = set(_read(os.path.join(own, "cgroup.controllers")).split())
    wanted = [c for c in wanted if c in available]
    if not wanted:
        return [], "the unified hierarchy offers none of the controllers here", False
    enabled = _enable_controllers(own, wanted)
    if len(enabled) == len(wanted):
        # Only the root group may hold processes and hand controllers on: other programs are siblings.
        return enabled, None, False
    # Our group holds processes (us): move into a leaf beside the sessions and try again.
    leaf = os.path.join(own, _DAEMON_LEAF)
    try:
        os.makedirs(leaf, exist_ok=True)
        _write(os.path.join(leaf, "cgroup.procs"), str(os.getpid()))
    except OSError as exc:
        return enabled, f"the daemon's control group is not delegated to it ({exc.strerror})", False
    enabled = _enable_controllers(own, wanted)
    missing = [c for c in wanted if c not in enabled]
    return enabled, (f"cannot enable {', '.join(missing)} in {own}" if missing else None), True


def _v1_nest(own: str, name: str, tools_cpu_weight: int) -> tuple[str, str] | None:
    """Under version 1, move the daemon into ``own``/``name`` with its sessions' group below it at
    ``tools_cpu_weight``; (that group, the daemon's), or None where the daemon may not move (logged)."""
    unit = os.path.join(own, name)
    sessions = os.path.join(unit, _V1_SESSIONS)
    try:
        os.makedirs(sessions, exist_ok=True)
        _write_cpu_weight(unit, 1, _V1_UNIT_WEIGHT)
        _write_cpu_weight(sessions, 1, tools_cpu_weight)
        _write(os.path.join(unit, "cgroup.procs"), str(os.getpid()))
    except OSError as exc:
        log.info("the sessions' processes share the CPU with the daemon as equals: it cannot move into %s (%s)",
                 unit, exc.strerror)  # fmt: skip
        return None
    return sessions, unit


def find_cgroups(tools_cpu_weight: int) -> CgroupTree:
    """Find where this daemon may make control groups and make its own, every session's processes
    weighted ``tools_cpu_weight`` against the daemon's 100 where the daemon can be their sibling;
    controllers it cannot use are listed in ``problems`` (never raised: limits then fall back to
    resource limits)."""
    try:
        mounts, own = _mounts(), _own_groups()
    except OSError as exc:
        return CgroupTree({}, {}, dict.fromkeys(CONTROLLERS, f"cannot read the control groups: {exc.strerror}"))
    name = f"{_PREFIX}{os.getpid()}"
    groups: dict[str, str] = {}
    versions: dict[str, int] = {}
    problems: dict[str, str] = {}
    moved: tuple[str, str] | None = None
    weighted: int | None = None
    v1 = _v1_groups(mounts, own)
    if "cpu" in v1 and os.path.basename(v1["cpu"]) == f"{_PREFIX}{os.getppid()}":
        # A session host the daemon started, born in the daemon's group: its own goes beside it.
        outer = os.path.dirname(v1["cpu"])
        v1 = {controller: outer if directory == v1["cpu"] else directory for controller, directory in v1.items()}
    for controller, directory in v1.items():
        try:
            _clean_stale(directory)
            os.makedirs(os.path.join(directory, name), exist_ok=True)
        except OSError as exc:
            problems[controller] = f"cannot make a control group in {directory}: {exc.strerror}"
            continue
        groups[controller], versions[controller] = os.path.join(directory, name), 1
    if "cpu" in groups:
        nested = _v1_nest(v1["cpu"], name, tools_cpu_weight)
        if nested is not None:
            sessions, unit = nested
            moved, weighted = (v1["cpu"], unit), tools_cpu_weight
            # Controllers mounted with cpu share its hierarchy, so its groups.
            for controller in [c for c in groups if v1[c] == v1["cpu"]]:
                groups[controller] = sessions
    rest = [c for c in CONTROLLERS if c not in groups and c not in problems]
    unified = _v2_group(mounts, own) if rest else None
    if rest and unified is not None:
        try:
            _clean_stale(unified)
            enabled, problem, beside = _v2_parent(unified, rest)
            sessions = os.path.join(unified, name)
            if enabled:
                os.makedirs(sessions, exist_ok=True)
                _enable_controllers(sessions, enabled)
                if beside and "cpu" in enabled:
                    _write_cpu_weight(sessions, 2, tools_cpu_weight)
                    weighted = tools_cpu_weight
            for controller in enabled:
                groups[controller], versions[controller] = sessions, 2
            for controller in rest:
                if controller not in enabled:
                    problems[controller] = problem or "not available"
        except OSError as exc:
            problems.update(dict.fromkeys(rest, f"cannot use the unified control group {unified}: {exc.strerror}"))
    for controller in CONTROLLERS:
        if controller not in groups:
            problems.setdefault(controller, "no control group hierarchy offers it")
    return CgroupTree(groups, versions, problems, moved, weighted)
