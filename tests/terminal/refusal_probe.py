"""The resident shell's init refusing to run where it cannot be sure its namespaces are its own.

Its init runs only in a real jail here, never elsewhere: each case starts the real resident through a daemon's
jails and, through the daemon's seam (``tools.jail.resident._not_shared``), tells the init that the
namespaces it must not share are its own jail's (as they would be, were it started outside a jail), or
sends it a first request it cannot read. :func:`refusals` runs in-process as root and, under ``setpriv``,
as an ordinary user (``python -m tests.terminal.refusal_probe WORK``).
"""

from __future__ import annotations

import json
import logging
import os
import select
import signal
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import trio

from config.sandbox import SandboxConfig
from config.terminal import TerminalConfig
from tests.jail.helpers import BASE_ENV, NoJail, open_daemon_jails
from tools.jail import SandboxMode, SessionJail, resident
from tools.jail.policy import JailPolicy
from tools.jail.process import JailedProcess, jail_init
from tools.terminal import run_foreground

ON = TerminalConfig(kill_grace_seconds=0.3, exit_drain_seconds=0.2)
SEEN = "readlink /proc/self/ns/pid /proc/self/ns/ipc /proc/self/ns/mnt"


def _jails_own(policy: JailPolicy, process: JailedProcess) -> bytes:
    """The namespaces of the resident jail's own init, named as the daemon's."""
    init = jail_init(process.pid)
    assert init is not None
    return resident.namespaces_request(policy, init)


def _jails_own_ipc(policy: JailPolicy, process: JailedProcess) -> bytes:
    """The daemon's namespaces, but for the IPC one: the resident jail's own."""
    init = jail_init(process.pid)
    assert init is not None
    ipc = os.fsencode(os.readlink(f"/proc/{init}/ns/ipc"))
    fields = resident.namespaces_request(policy).split(b"\0")
    return b"\0".join(ipc if field.startswith(b"ipc:") else field for field in fields)


FIRST_REQUESTS: dict[str, Callable[[JailPolicy, JailedProcess], bytes]] = {
    "shared": _jails_own,
    "shared, gone before the command": _jails_own,
    "shared, gone with the command unread": _jails_own,
    "ipc shared": _jails_own_ipc,
    "garbled": lambda policy, process: b"namespaces\0pid:[4026531836]\0ipc:[../../x]",
    "too few": lambda policy, process: b"namespaces\0uts:[1]",
    "missing": lambda policy, process: b"run\x0064\x00/\x001\x00true",
}
"""How each case tells the init which namespaces it must not share."""
GONE = {"shared, gone before the command": "before", "shared, gone with the command unread": "unread"}
"""The cases whose init has refused and exited before the daemon sends it the command (its socket closed), and
after (the command waits in its socket, unread: the daemon's end hears ECONNRESET once, then its answer)."""


class _Lines(logging.Handler):
    """The resident's log lines, kept."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def _pidfd(process: JailedProcess) -> int:
    init = jail_init(process.pid)
    assert init is not None
    return os.pidfd_open(init)


def _exited(pidfd: int) -> None:
    try:
        assert select.select([pidfd], [], [], 10)[0], "the init did not exit"
    finally:
        os.close(pidfd)


@contextmanager
def _first_request(
    make: Callable[[JailPolicy, JailedProcess], bytes], started: list[JailedProcess], *, gone: str | None
) -> Iterator[None]:
    """The daemon's seam replaced by ``make``, each resident jail it is used for kept in ``started``. ``gone``
    ``before``: sending that first request waits for the init to exit; ``unread``: the init is stopped
    (SIGSTOP) until the command is sent too, then waited for."""
    stopped: list[int] = []

    def seam(policy: JailPolicy, process: JailedProcess) -> bytes:
        started.append(process)
        return make(policy, process)

    def send(self: Any, request: bytes, fds: Sequence[int] = ()) -> None:
        if gone == "unread" and request.startswith(b"namespaces"):
            stopped.append(_pidfd(self.process))
            signal.pidfd_send_signal(stopped[0], signal.SIGSTOP)
        pidfd = _pidfd(self.process) if gone == "before" and request.startswith(b"namespaces") else None
        sent(self, request, fds)
        if pidfd is not None:
            _exited(pidfd)
        elif stopped and not request.startswith(b"namespaces"):
            signal.pidfd_send_signal(stopped[0], signal.SIGCONT)
            _exited(stopped.pop())

    kept, sent = resident._not_shared, resident._Resident.send
    resident._not_shared = seam
    if gone is not None:
        setattr(resident._Resident, "send", send)
    try:
        yield
    finally:
        resident._not_shared = kept
        setattr(resident._Resident, "send", sent)


def _fds() -> list[str]:
    return sorted(os.listdir("/proc/self/fd"))


async def refusals(work: Path) -> dict[str, Any]:
    """Each case's session: what its commands saw, what its refused resident did, what was left."""
    found: dict[str, Any] = {}
    logger = logging.getLogger("tools.jail.resident")
    lines = _Lines()
    logger.addHandler(lines)
    try:
        async with open_daemon_jails(work, SandboxConfig()) as jails:
            fds = _fds()
            for case, make in FIRST_REQUESTS.items():
                session = await jails.open_session(case, SandboxMode.WORKSPACE_WRITE, str(work))
                jail, started = session.jail, []
                assert jail.shell is not None
                del lines.lines[:]
                try:
                    with _first_request(make, started, gone=GONE.get(case)):
                        outputs = [await _seen(jail, work) for _ in range(2)]
                finally:
                    await jails.close_session(session)
                host = [os.readlink(f"/proc/self/ns/{kind}") for kind in ("pid", "ipc", "mnt")]
                found[case] = {
                    "a jail each": outputs[0] != outputs[1],
                    "none the host's": not any(name in output for output in outputs for name in host),
                    "residents tried": len(started),
                    "residents started": jail.shell.started,
                    "init exit": [process.returncode for process in started],
                    "gone": [not os.path.exists(f"/proc/{process.pid}") for process in started],
                    "log": list(lines.lines),
                }
            found["descriptors kept"] = _fds() == fds
    except NoJail as exc:
        return {"unavailable": str(exc)}
    finally:
        logger.removeHandler(lines)
    return found


async def _seen(jail: SessionJail, work: Path) -> str:
    """One foreground command of the session: the namespaces it saw."""
    result = await run_foreground(SEEN, cwd=str(work), env=BASE_ENV, config=ON, jail=jail)
    assert result.exit_code == 0, result.output
    return result.output


if __name__ == "__main__":
    print(json.dumps(trio.run(refusals, Path(sys.argv[1]))))
