"""The launcher's reaper thread: a resident jail that ends by itself is reaped with nobody waiting for it."""

from __future__ import annotations

import os
import subprocess
import threading
import time

from tools.jail._reaper import Reaper


def _descriptors() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


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
        before = _descriptors()
        unstarted = Reaper()
        unstarted.close()
        started = Reaper()
        started.start()
        child = subprocess.Popen(["sleep", "30"])
        started.watch(child.pid, child.wait)
        started.close()
        try:
            # The thread closes its pipe and pidfds as it ends.
            assert _within(10, lambda: _descriptors() <= before)
        finally:
            child.kill()
            child.wait()
