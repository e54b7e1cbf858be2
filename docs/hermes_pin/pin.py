"""Write the Hermes Agent 0.19.0 fixtures the compatibility tests compare against.

    python docs/hermes_pin/pin.py            # rewrites tests/fixtures/hermes_0_19/*.json

Installs ``hermes-agent==0.19.0`` from PyPI into a throwaway virtualenv in a temporary directory, runs
``dump.py`` there (it imports Hermes's own modules), and removes the virtualenv. Hermes runs with a
temporary ``HERMES_HOME`` and ``HOME`` so nothing of this machine's user leaks into the fixtures, and the
guard's verdicts do not depend on where this runs. The tests never run this: they read the stored fixtures,
so they stay offline and fast, and a change of pin is a reviewed diff of the fixtures.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import venv
from pathlib import Path

HERMES_REQUIREMENT = "hermes-agent==0.19.0"
HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parents[1] / "tests" / "fixtures" / "hermes_0_19"
FIXED_HOME = "/home/hermes-user"
"""The ``HOME`` Hermes sees: its guard folds the home directory's path into ``~``."""


def pin(out: Path = FIXTURES) -> None:
    """Install Hermes 0.19.0 aside and dump its keys, schemas and guard verdicts into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="hermes-pin-") as scratch:
        env_dir = Path(scratch) / "venv"
        venv.create(env_dir, with_pip=True)
        python = env_dir / "bin" / "python"
        subprocess.run([python, "-m", "pip", "install", "--quiet", HERMES_REQUIREMENT], check=True)
        hermes_home = Path(scratch) / "hermes-home"
        hermes_home.mkdir()
        environ = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": FIXED_HOME,
                   "HERMES_HOME": str(hermes_home), "LANG": "C.UTF-8"}
        subprocess.run([python, HERE / "dump.py", out], check=True, cwd=scratch, env=environ)


if __name__ == "__main__":
    pin(Path(sys.argv[1]) if len(sys.argv) > 1 else FIXTURES)
