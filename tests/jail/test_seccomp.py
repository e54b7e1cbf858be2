"""The jail's system-call filter as a program: what it answers for each call, and how far the kernel walks it.

The program is run here by a small interpreter of the classic BPF instructions libseccomp emits, on the
``seccomp_data`` the kernel would give it, so every call number of every ABI can be asked without a jail.
(``tests/jail/test_second_wall.py`` checks the loaded filter from inside real jails.)
"""

from __future__ import annotations

import errno
import struct

import pytest

from tools.jail._seccomp import CLONE_NAMESPACE_FLAGS, REFUSED_CALLS, SeccompUnavailable, filter_program

pyseccomp = pytest.importorskip("pyseccomp")

_AUDIT_ARCH_X86_64 = 0xC000003E
_AUDIT_ARCH_I386 = 0x40000003
_X32_SYSCALL_BIT = 0x40000000
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
_TIOCSTI = 0x5412
_TIOCLINUX = 0x541C
# The highest call numbers the kernel caches a verdict for (x86-64 and i386 both end below 512).
_CALL_NUMBERS = range(512)
# The longest path through the program, in instructions: a binary search on the call's number.
_LONGEST_PATH = 40

# Classic BPF opcodes (BPF_LD|BPF_W|BPF_ABS, BPF_ALU|BPF_AND|BPF_K, BPF_JMP|BPF_JEQ/JGT/JGE/JSET|BPF_K, BPF_RET|BPF_K).
_LD_ABS, _AND, _JEQ, _JGT, _JGE, _JSET, _RET = 0x20, 0x54, 0x15, 0x25, 0x35, 0x45, 0x06
_JUMPS = {
    _JEQ: lambda a, k: a == k, _JGT: lambda a, k: a > k, _JGE: lambda a, k: a >= k, _JSET: lambda a, k: a & k != 0,
}  # fmt: skip


def _program() -> list[tuple[int, int, int, int]]:
    try:
        program = filter_program()
    except SeccompUnavailable as exc:
        pytest.skip(f"no filter can be built here: {exc}")
    return [struct.unpack_from("<HBBI", program, offset) for offset in range(0, len(program), 8)]


def _run(program: list[tuple[int, int, int, int]], arch: int, nr: int, args: tuple[int, ...] = ()) -> tuple[int, int]:
    """What the program answers for a call, and how many instructions it ran to answer."""
    data = struct.pack("<II Q 6Q", nr, arch, 0, *(list(args) + [0] * (6 - len(args))))
    pc, acc, steps = 0, 0, 0
    while True:
        code, jt, jf, k = program[pc]
        steps += 1
        if code == _LD_ABS:
            acc = struct.unpack_from("<I", data, k)[0]
        elif code == _AND:
            acc &= k
        elif code in _JUMPS:
            pc += jt if _JUMPS[code](acc, k) else jf
        elif code == _RET:
            return k, steps
        else:
            raise AssertionError(f"instruction {code:#x} at {pc} is not one libseccomp emits for these rules")
        pc += 1


def _abis() -> list[tuple[int, int, int]]:
    """(libseccomp's arch, the audit arch the kernel reports, the bit or-ed into the call number)."""
    return [
        (pyseccomp.Arch.X86_64, _AUDIT_ARCH_X86_64, 0),
        (pyseccomp.Arch.X86, _AUDIT_ARCH_I386, 0),
        (pyseccomp.Arch.X32, _AUDIT_ARCH_X86_64, _X32_SYSCALL_BIT),
    ]


def _number(arch: int, name: str) -> int | None:
    try:
        number = pyseccomp.resolve_syscall(arch, name)
    except (OSError, ValueError):
        return None
    return number if number >= 0 else None


@pytest.fixture(autouse=True)
def _x86_64() -> None:
    if pyseccomp.system_arch() != pyseccomp.Arch.X86_64:
        pytest.skip("the call numbers here are x86's")


class TestVerdicts:
    """The program refuses each listed call on every x86 ABI and lets the others through."""

    def test_refused_calls(self) -> None:
        program = _program()
        for arch, audit, _ in _abis():
            for name in REFUSED_CALLS:
                number = _number(arch, name)
                if number is not None:
                    assert _run(program, audit, number)[0] == _RET_ERRNO | errno.EPERM, (arch, name)

    def test_everyday_calls_pass(self) -> None:
        program = _program()
        for arch, audit, _ in _abis():
            for name in ("read", "write", "openat", "execve", "wait4", "exit_group"):
                assert _run(program, audit, _number(arch, name) or 0)[0] == _RET_ALLOW, (arch, name)

    def test_clone_with_a_namespace_flag_is_refused(self) -> None:
        program = _program()
        for arch, audit, _ in _abis():
            clone = _number(arch, "clone")
            assert clone is not None
            for bit in range(32):
                flag = 1 << bit
                expected = _RET_ERRNO | errno.EPERM if CLONE_NAMESPACE_FLAGS & flag else _RET_ALLOW
                assert _run(program, audit, clone, (flag | 0x11,))[0] == expected, (arch, hex(flag))
            assert _run(program, audit, _number(arch, "clone3") or 0)[0] == _RET_ERRNO | errno.ENOSYS

    def test_typing_into_a_terminal_is_refused(self) -> None:
        program = _program()
        for arch, audit, _ in _abis():
            ioctl = _number(arch, "ioctl")
            assert ioctl is not None
            for request in (_TIOCSTI, _TIOCLINUX):
                assert _run(program, audit, ioctl, (0, request))[0] == _RET_ERRNO | errno.EPERM
            assert _run(program, audit, ioctl, (0, 0x5401))[0] == _RET_ALLOW  # TCGETS


class TestCostToLoad:
    """The kernel walks the program once per call number at every jail's start: no call's path is long."""

    def test_longest_path_is_a_binary_search(self) -> None:
        program = _program()
        longest = max(
            _run(program, audit, bit | nr)[1] for _, audit, bit in _abis() for nr in _CALL_NUMBERS
        )
        assert longest <= _LONGEST_PATH
