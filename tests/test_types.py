"""The type checker, run as part of the suite so CI runs it (its configuration: ``[tool.mypy]`` in
pyproject.toml)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


class TestTypes:
    """mypy finds no error in the project's packages."""

    def test_mypy_passes(self) -> None:
        """The whole project type-checks under pyproject.toml's settings (strict where it says so)."""
        # No --cache-dir override: a developer's second run reuses .mypy_cache; CI's fresh clone runs cold.
        result = subprocess.run(
            [sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True, stdin=subprocess.DEVNULL,
        )
        assert result.returncode == 0, f"mypy found errors:\n{result.stdout}{result.stderr}"


def _mypy_on(source: str, directory: Path) -> subprocess.CompletedProcess[str]:
    """mypy, under the project's settings, on one probe module written to ``directory``."""
    probe = directory / "probe.py"
    probe.write_text(source)
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"), str(probe)],
        cwd=ROOT, capture_output=True, text=True, stdin=subprocess.DEVNULL,
    )


class TestTypedAsk:
    """``ask`` is typed as the reply its request declares, and only a request may be asked."""

    def test_the_reply_has_the_requests_type(self, tmp_path: Path) -> None:
        """The reply of a cron, a supervisor and a session request is the type each class names."""
        result = _mypy_on(
            "from typing import assert_type\n"
            "from actors import ActorHandle\n"
            "from supervisor import ChildInfo, WhichChildren\n"
            "from actors.platform.cron.actor import JobView, ListJobs\n"
            "from messages.session import EventFeed, Subscribe\n"
            "async def probe(handle: ActorHandle[object]) -> None:\n"
            "    assert_type(await handle.ask(ListJobs()), list[JobView])\n"
            "    assert_type(await handle.ask(WhichChildren()), list[ChildInfo])\n"
            "    assert_type(await handle.ask(Subscribe('probe')), EventFeed)\n",
            tmp_path,
        )
        assert result.returncode == 0, result.stdout + result.stderr

    def test_a_message_that_names_no_reply_is_refused(self, tmp_path: Path) -> None:
        """Asking with a message that is not a ``Request`` is a type error (a tell takes it)."""
        result = _mypy_on(
            "from actors import ActorHandle\n"
            "async def probe(handle: ActorHandle[object]) -> None:\n"
            "    await handle.tell('a note')\n"
            "    await handle.ask('a question')\n",
            tmp_path,
        )
        assert result.returncode == 1
        assert 'probe.py:4: error: Argument 1 to "ask" of "ActorHandle" has incompatible type "str"' in result.stdout


def _unexplained_ignores() -> list[str]:
    """Each ``# type: ignore`` in the repository's Python files (tests and benches too) with no reason
    beside it: a comment after it on its line, or a comment line just above."""
    # An ignore names its error code (the checker refuses one without, in the code it checks); prose has none.
    ignore = re.compile(r"#\s*type:\s*ignore\[[^\]]*\](?P<rest>.*)$")
    files = subprocess.run(["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    found = []
    for name in files.split():
        lines = (ROOT / name).read_text().splitlines()
        for number, line in enumerate(lines, 1):
            match = ignore.search(line)
            if match is None:
                continue
            above = lines[number - 2].strip() if number > 1 else ""
            if not match["rest"].strip().startswith("#") and not above.startswith("#"):
                found.append(f"{name}:{number}")
    return found


class TestIgnores:
    """Every type-checker ignore says why it is there."""

    def test_every_ignore_has_a_reason(self) -> None:
        """No ``# type: ignore`` stands without a comment beside it."""
        assert _unexplained_ignores() == []
