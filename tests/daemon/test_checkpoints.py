"""Checkpoints through the user's surfaces: a real daemon whose session (the scripted model) writes files,
then ``hermes-actors checkpoints list|diff|restore`` and attach's ``/rollback``."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from messages import control as c
from tests.daemon.checkpoint_helpers import ENABLED, checkpoint_daemon, session_with_edits
from tests.daemon.helpers import DaemonProcess, ScriptedProviderProcess, run_cli


@pytest.fixture(scope="module")
def enabled() -> Iterator[DaemonProcess]:
    """One daemon with checkpoints.enabled for the module's tests."""
    with checkpoint_daemon(ENABLED) as (daemon, _):
        yield daemon


@pytest.fixture
def work(enabled: DaemonProcess) -> Iterator[Path]:
    """A working directory of its own for each test, holding a.txt."""
    path = Path(tempfile.mkdtemp(prefix="ha-work-", dir="/var/tmp"))
    (path / "a.txt").write_text("original\n")
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _cli_json(daemon: DaemonProcess, *args: str) -> dict[str, Any]:
    result = run_cli(daemon.home, "checkpoints", *args, "--json")
    assert 0 == result.returncode, result.stderr
    return dict(json.loads(result.stdout))


class TestCheckpointsCommand:
    """A session's edits are checkpointed once per turn; the CLI lists, diffs and restores them, undoably."""

    def test_list_diff_restore_undo(self, enabled: DaemonProcess, work: Path, provider: ScriptedProviderProcess) -> None:
        """Two turns, two checkpoints; restoring the older undoes both turns' edits; restoring 1 undoes that."""
        daemon = enabled
        session_id = session_with_edits(daemon, provider, work)
        assert "turn two\n" == (work / "a.txt").read_text()

        listed = _cli_json(daemon, "list", session_id)
        assert str(work) == listed["workdir"]
        assert ["before write_file", "before write_file"] == [cp["reason"] for cp in listed["checkpoints"]]

        diff = run_cli(daemon.home, "checkpoints", "diff", session_id, "2")
        assert 0 == diff.returncode, diff.stderr
        assert "-original" in diff.stdout and "+turn two" in diff.stdout and "new.txt" in diff.stdout

        restored = run_cli(daemon.home, "checkpoints", "restore", session_id, "2")
        assert 0 == restored.returncode, restored.stderr
        assert f"Undo with: hermes-actors checkpoints restore {session_id} 1" in restored.stdout
        assert "original\n" == (work / "a.txt").read_text()
        assert not (work / "new.txt").exists()

        _cli_json(daemon, "restore", session_id, "1")
        assert "turn two\n" == (work / "a.txt").read_text() and "created\n" == (work / "new.txt").read_text()
        assert 4 == len(_cli_json(daemon, "list", session_id)["checkpoints"])

        # The model is told nothing of checkpoints: no request it received mentions them.
        assert "checkpoint" not in json.dumps(provider.requests()).lower()
        # The shadow repositories live in the daemon's home; the working directory holds no git state.
        assert (daemon.home / "checkpoints").is_dir()
        assert ["a.txt", "new.txt"] == sorted(path.name for path in work.iterdir())

    def test_unknown_checkpoint_and_session(self, enabled: DaemonProcess, work: Path, provider: ScriptedProviderProcess) -> None:
        """A number past the list and an unknown session are refused with exit status 2, nothing changed."""
        session_id = session_with_edits(enabled, provider, work)
        result = run_cli(enabled.home, "checkpoints", "restore", session_id, "9")
        assert 2 == result.returncode and "no checkpoint 9: " in result.stderr
        assert "turn two\n" == (work / "a.txt").read_text()
        assert 2 == run_cli(enabled.home, "checkpoints", "list", "no-such-session").returncode

    def test_off_by_default(self, provider: ScriptedProviderProcess) -> None:
        """Without checkpoints.enabled, edits take no snapshot and the command says how to turn them on."""
        with checkpoint_daemon("") as (daemon, work):
            session_id = session_with_edits(daemon, provider, work)
            result = run_cli(daemon.home, "checkpoints", "list", session_id)
            assert 1 == result.returncode
            assert "checkpoints.enabled: true" in result.stderr
            as_json = run_cli(daemon.home, "checkpoints", "restore", session_id, "--json")
            assert (1, "unavailable") == (as_json.returncode, json.loads(as_json.stdout)["error"]["code"])
            assert not (daemon.home / "checkpoints").exists()


class TestRollbackInAttach:
    """/rollback in attach lists the checkpoints, diffs one, and restores one."""

    def test_rollback(self, enabled: DaemonProcess, work: Path, provider: ScriptedProviderProcess) -> None:
        """/rollback, /rollback diff 1, /rollback 2 from attach's input: the list, the diff, the restore."""
        session_id = session_with_edits(enabled, provider, work)
        # A piped attach leaves once the turns its lines started are over: the last line is a message.
        script = "/rollback\n/rollback diff 1\n/rollback 2\n/rollback please\nthanks, no tools\n"
        result = run_cli(enabled.home, "attach", session_id, stdin=script, timeout=60)
        assert 0 == result.returncode, result.stderr
        out = result.stdout
        assert f"Checkpoints of {work} (1 is the newest):" in out and "Restore one with: /rollback N" in out
        assert "-turn one" in out and "+turn two" in out
        assert "Undo with: /rollback 1" in out
        assert "original\n" == (work / "a.txt").read_text()
        assert "/rollback takes nothing (the list), N (restore) or diff N" in out


class TestRestoreWhileBusy:
    """A restore is refused while the session runs a turn."""

    def test_busy(self, enabled: DaemonProcess, work: Path, provider: ScriptedProviderProcess) -> None:
        """With a turn streaming, restore answers busy and leaves the files alone."""
        session_id = session_with_edits(enabled, provider, work)
        provider.push({"text": "slow", "delay_first_byte": 30})
        with enabled.client() as client:
            client.request(c.Attach(client.next_id(), session_id, None))
            client.request(c.SendMessage(client.next_id(), session_id, "take your time"))
            while type(client.receive()).__name__ != "TurnStarted":
                pass
            result = run_cli(enabled.home, "checkpoints", "restore", session_id, "1")
            assert 1 == result.returncode and "running a turn" in result.stderr
            client.request(c.InterruptSession(client.next_id(), session_id))
        assert "turn two\n" == (work / "a.txt").read_text()
