"""The launcher's reaper thread: a resident jail that ends by itself is reaped with nobody waiting for it."""

from __future__ import annotations

import os
import subprocess
import threading
import time

from tools.jail._reaper import Reaper


def _held(child_pid: int, pipes: set[str]) -> list[str]:
    """Our descriptors that are one of ``pipes`` (their ``pipe:[inode]`` names) or a pidfd of ``child_pid``.

    Only these: other tests' threads in this process may open and close descriptors of their own meanwhile.
    """
    held = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
            with open(f"/proc/self/fdinfo/{fd}") as info:
                pid_lines = [line for line in info if line.startswith("Pid:")]
        except OSError:
            continue  # closed meanwhile
        if target in pipes or pid_lines == [f"Pid:\t{child_pid}\n"]:
            held.append(fd)
    return held


def _within(seconds: float, done: object) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if callable(done) and done():
            return True
        time.sleep(0.005)
    return False


class TestReaper:
    """A watched child is reaped once it exits; closing ends the thread and gives back its descriptors."""

    def test_reaps_a_child_nobody_waits_for(self) -> None:
        reaper = Reaper()
        reaper.start()
        try:
            reaped = threading.Event()
            child = subprocess.Popen(["true"])
            reaper.watch(child.pid, lambda: (child.wait(), reaped.set()))
            assert reaped.wait(10)
            assert child.returncode == 0 and not os.path.exists(f"/proc/{child.pid}")
        finally:
            reaper.close()

    def test_close_gives_back_its_descriptors(self) -> None:
        child = subprocess.Popen(["sleep", "30"])
        try:
            unstarted = Reaper()
            unstarted.watch(child.pid, child.wait)
            unstarted_pipes = {os.readlink(f"/proc/self/fd/{fd}") for fd in (unstarted._wake_read, unstarted._wake_write)}
            unstarted.close()
            assert _held(child.pid, unstarted_pipes) == []
            started = Reaper()
            started.start()
            pipes = {os.readlink(f"/proc/self/fd/{fd}") for fd in (started._wake_read, started._wake_write)}
            started.watch(child.pid, child.wait)
            assert len(_held(child.pid, pipes)) == 3  # its pipe's two ends and the child's pidfd
            started.close()
            # The thread closes its pipe and pidfds as it ends.
            assert _within(10, lambda: _held(child.pid, pipes) == [])
        finally:
            child.kill()
            child.wait()
