"""A daemon with checkpoints on, and a session whose scripted model writes files, for the checkpoint tests of
the CLI, attach and the terminal client."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.daemon.helpers import DaemonProcess, ScriptedProviderProcess, attached_turn

__all__ = ["ENABLED", "checkpoint_daemon", "session_with_edits"]

ENABLED = "checkpoints:\n  enabled: true\n"


def _write(call_id: str, path: str, content: str) -> dict[str, Any]:
    return {"id": call_id, "name": "write_file", "arguments": {"path": path, "content": content}}


@contextmanager
def checkpoint_daemon(config: str) -> Iterator[tuple[DaemonProcess, Path]]:
    """A daemon with ``config`` and a working directory for its session (under /var/tmp: a jailed
    session's /tmp is its own)."""
    base = Path(tempfile.mkdtemp(prefix="ha-", dir="/var/tmp"))
    home = base / "home"
    home.mkdir(mode=0o700)
    (home / "config.yaml").write_text(config)
    work = base / "work"
    work.mkdir()
    (work / "a.txt").write_text("original\n")
    daemon = DaemonProcess(home).start()
    try:
        yield daemon, work
    finally:
        daemon.stop()
        shutil.rmtree(base, ignore_errors=True)


def session_with_edits(daemon: DaemonProcess, provider: ScriptedProviderProcess, work: Path) -> str:
    """A session in ``work`` whose two turns each write files: two write_file calls in the first (one
    checkpoint), one in the second."""
    provider.reset()
    provider.push(
        {"tool_calls": [_write("call_1", "a.txt", "turn one\n"), _write("call_2", "new.txt", "created\n")]},
        {"text": "first edit done"},
        {"tool_calls": [_write("call_3", "a.txt", "turn two\n")]},
        {"text": "second edit done"},
    )
    with daemon.client() as client:
        session_id = provider.create_session(client, str(work))
        client.settimeout(60)
        for text in ("edit the files", "edit again"):
            finished = attached_turn(client, session_id, text)[-1]
            assert "completed" == finished.reason, finished
    return session_id
