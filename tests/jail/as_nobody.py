"""Running a probe module as an ordinary user, for the tests that must hold as root and as anyone else.

The suite runs as root (here and in CI); ``setpriv`` makes the probe's process uid 65534 without groups.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

NOBODY = 65534
REPO = Path(__file__).parents[2]


@pytest.fixture
def work() -> Iterator[Path]:
    """A directory under ``/var/tmp`` (a jail's ``/tmp`` is its own) that the unprivileged user owns."""
    path = Path(tempfile.mkdtemp(prefix="hx-nobody-", dir="/var/tmp"))
    os.chmod(path, 0o755)
    os.chown(path, NOBODY, NOBODY)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def run_as_nobody(module: str, work: Path) -> tuple[Any, str]:
    """``python -m module WORK`` as uid 65534: what it printed (JSON), and its stderr.

    Skips where the suite cannot become an ordinary user (not root, no ``setpriv``).
    """
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or setpriv is None:
        pytest.skip("needs root and setpriv to become an ordinary user")
    done = subprocess.run(
        [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", sys.executable, "-m", module, str(work)],
        capture_output=True, text=True, timeout=120, cwd=REPO,
        env={"PATH": os.environ["PATH"], "HOME": str(work), "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), done.stderr
