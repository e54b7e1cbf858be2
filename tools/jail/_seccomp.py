"""The jail's system-call filter: the calls no tool ever needs, refused with ``EPERM``.

A jail already has no capabilities (``--cap-drop ALL`` in a user namespace of its own), so most of these
calls would fail anyway. The filter is the second lock on the same doors, after Codex's and Docker's
default profiles: it holds even where a kernel bug, a leftover capability or a nested user namespace
would let one of them through. What it refuses:

- reshaping the jail: mount and the new mount API, ``umount2``, ``pivot_root``, ``chroot``, ``unshare``,
  ``setns``, and ``clone`` with any ``CLONE_NEW*`` flag (``clone3`` passes its flags in memory, which a
  filter cannot read, so it answers ``ENOSYS`` and the C library falls back to ``clone``);
- reaching into other processes: ``ptrace``, ``process_vm_readv``/``writev``, ``kcmp``;
- the kernel's own surfaces: ``bpf``, ``perf_event_open``, ``userfaultfd``, ``keyctl``/``add_key``/
  ``request_key``, module loading, ``kexec``, ``open_by_handle_at``, ``reboot``, ``swapon``/``swapoff``,
  ``acct``, ``syslog``, ``quotactl``, ``iopl``/``ioperm``, setting the clock;
- ``ioctl(TIOCSTI)`` and ``TIOCLINUX``: typing into a terminal (the jail is its own session already).

The program is built once per process with libseccomp (through ``pyseccomp``, a thin ctypes binding)
rather than written as BPF by hand: libseccomp knows every architecture's system-call numbers, the
32-bit ABIs a 64-bit kernel also runs (x86 and x32 on x86-64, each filtered alike) and the multiplexed
calls. bubblewrap loads it (``--seccomp FD``) as the last step before it runs the command.

Loading it is a cost of every jail: the kernel runs the program once for every system-call number of both
x86 ABIs it caches verdicts for, so that cost grows with the paths through it. libseccomp lays the
rules out as a binary search on the call's number (``CTL_OPTIMIZE`` 2) rather than a chain of comparisons:
13 instructions a call on average instead of 73 (37 at most instead of 125), and a load costs the kernel
0.20 ms instead of 0.34 (:data:`OPTIMIZE_BINARY_TREE`; libseccomp before 2.5 has no such layout and keeps
the chain).
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import tempfile
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyseccomp  # untyped (no stubs): its names are Any to the checker

__all__ = [
    "CLONE_NAMESPACE_FLAGS", "OPTIMIZE_BINARY_TREE", "REFUSED_CALLS", "SeccompUnavailable", "filter_program",
    "program_pipe",
]  # fmt: skip

REFUSED_CALLS: tuple[str, ...] = (
    "mount", "umount2", "umount", "pivot_root", "chroot", "move_mount", "open_tree", "fsopen", "fsconfig",
    "fsmount", "fspick", "mount_setattr", "unshare", "setns",
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp",
    "bpf", "perf_event_open", "userfaultfd", "keyctl", "add_key", "request_key",
    "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
    "open_by_handle_at", "name_to_handle_at", "reboot", "swapon", "swapoff", "acct", "syslog", "quotactl",
    "quotactl_fd", "iopl", "ioperm", "settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
    "lookup_dcookie", "vhangup", "nfsservctl",
)  # fmt: skip
"""Refused outright, whatever their arguments."""

CLONE_NAMESPACE_FLAGS = 0x7E020000
"""``CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET``."""

OPTIMIZE_BINARY_TREE = 2
"""libseccomp's ``SCMP_FLTATR_CTL_OPTIMIZE`` value that sorts the calls into a binary tree (libseccomp 2.5+)."""

_NAMESPACE_FLAG_BITS = tuple(1 << bit for bit in range(32) if CLONE_NAMESPACE_FLAGS >> bit & 1)
_TIOCSTI = 0x5412
_TIOCLINUX = 0x541C


class SeccompUnavailable(RuntimeError):
    """No filter can be built here: libseccomp is missing, or refused the rules; says which."""


def _refused_anywhere(rules: pyseccomp.SyscallFilter, name: str) -> None:
    """Refuse ``name`` where this architecture has it (an old call one lacks is not an error)."""
    import pyseccomp  # noqa: PLC0415 - loaded with libseccomp only when a filter is built

    try:
        rules.add_rule(pyseccomp.ERRNO(errno.EPERM), name)
    except (OSError, ValueError, RuntimeError):
        # libseccomp answers -EDOM/-EFAULT for a call this architecture does not have.
        pass


@functools.cache
def filter_program() -> bytes:
    """The filter as a BPF program for ``bwrap --seccomp``, built once per process.

    Raises:
        SeccompUnavailable: libseccomp cannot be loaded or refused the rules.
    """
    try:
        import pyseccomp  # noqa: PLC0415 - loads libseccomp.so.2, which a machine may lack
    except (ImportError, OSError, RuntimeError) as exc:
        raise SeccompUnavailable(f"libseccomp cannot be loaded ({exc}); install libseccomp2") from exc
    try:
        rules = pyseccomp.SyscallFilter(pyseccomp.ALLOW)
        with contextlib.suppress(OSError):  # libseccomp before 2.5 (EINVAL): the chain of comparisons
            rules.set_attr(pyseccomp.Attr.CTL_OPTIMIZE, OPTIMIZE_BINARY_TREE)
        # A 64-bit x86 kernel also runs 32-bit (x86) and x32 programs: filter their calls alike.
        if pyseccomp.system_arch() == pyseccomp.Arch.X86_64:
            for arch in (pyseccomp.Arch.X86, pyseccomp.Arch.X32):
                if not rules.exist_arch(arch):
                    rules.add_arch(arch)
        for name in REFUSED_CALLS:
            _refused_anywhere(rules, name)
        eperm = pyseccomp.ERRNO(errno.EPERM)
        # One rule a flag: a rule matches when every masked bit is set, so any one of them refuses the call.
        for flag in _NAMESPACE_FLAG_BITS:
            rules.add_rule(eperm, "clone", pyseccomp.Arg(0, pyseccomp.MASKED_EQ, flag, flag))
        rules.add_rule(pyseccomp.ERRNO(errno.ENOSYS), "clone3")
        for request in (_TIOCSTI, _TIOCLINUX):
            rules.add_rule(eperm, "ioctl", pyseccomp.Arg(1, pyseccomp.MASKED_EQ, 0xFFFFFFFF, request))
        with tempfile.TemporaryFile() as out:
            rules.export_bpf(out)
            out.seek(0)
            return out.read()
    except OSError as exc:
        raise SeccompUnavailable(f"libseccomp refused the jail's rules: {os.strerror(exc.errno or 0)}") from exc


def program_pipe(program: bytes) -> int:
    """The read end of a pipe holding ``program``, closed for writing: what ``bwrap --seccomp`` reads.

    A program fits a pipe's buffer (a few KiB against 64 KiB), so the write never blocks.
    """
    read, write = os.pipe()
    try:
        os.write(write, program)
    finally:
        os.close(write)
    return read
