"""The daemon on PostgreSQL (``store.url``): nothing committed lost to a kill -9, one database shared by
two daemons, and the URL's password kept out of what the daemon shows and logs."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from control.client import RequestFailed
from messages import control as c
from tests.daemon.helpers import DaemonProcess, ScriptedProviderProcess, attached_turn, database_daemon, run_cli
from tests.daemon.test_recovery import _stored_texts, _wait_for_path
from tests.daemon.test_sessions import NO_TOOLS, _chat

PASSWORD = "pg-password-never-shown"


def _with_password(url: str) -> str:
    """``url`` with a password (the test server trusts local connections, so any password works)."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(netloc=f"{parts.username}:{PASSWORD}@{parts.hostname or ''}"))


@pytest.fixture
def database(postgres_url: str) -> str:
    """A fresh database's URL, with a password in it."""
    return _with_password(postgres_url)


class TestPostgresDaemon:
    """A daemon whose store is PostgreSQL."""

    def test_kill_9_mid_turn_then_restart(self, home: Path, database: str, provider: ScriptedProviderProcess) -> None:
        """The user message sent before the crash is in PostgreSQL; the restarted daemon resumes the session."""
        daemon = database_daemon(home, database).start()
        try:
            session_id, _ = _chat(daemon, provider, NO_TOOLS)
            provider.push({"text": "never delivered", "delay_first_byte": 60})
            with daemon.client() as client:
                client.request(c.SendMessage(client.next_id(), session_id, "message before the crash, no tools"))
            _wait_for_path(daemon, lambda p: p.startswith(f"sessions/session:{session_id}/turn"))
            daemon.signal(signal.SIGKILL)
            daemon.wait(10)
        finally:
            daemon.stop()
        provider.reset()
        restarted = DaemonProcess(home).start()
        try:
            assert not (home / "state.db").exists()
            texts = _stored_texts(restarted, session_id)
            assert NO_TOOLS in texts and "message before the crash, no tools" in texts
            with restarted.client() as client:
                events = attached_turn(client, session_id, "after the restart, no tools")
            assert events[-1].reason == "completed"
            found = json.loads(run_cli(home, "sessions", "search", "restart", "--json").stdout)
            assert session_id in json.dumps(found)
        finally:
            restarted.stop()

    def test_two_daemons_share_the_database(
        self, tmp_path: Path, database: str, provider: ScriptedProviderProcess
    ) -> None:
        """A session one daemon stored is listed and shown by another daemon on the same database."""
        first = database_daemon(tmp_path / "a", database).start()
        second = database_daemon(tmp_path / "b", database).start()
        try:
            session_id, _ = _chat(first, provider, NO_TOOLS)
            listed = json.loads(run_cli(second.home, "sessions", "list", "--json").stdout)["sessions"]
            assert session_id in [row["id"] for row in listed]
            assert NO_TOOLS in _stored_texts(second, session_id)
        finally:
            first.stop()
            second.stop()

    def test_a_live_session_runs_on_one_host_and_moves_when_it_dies(
        self, tmp_path: Path, database: str, provider: ScriptedProviderProcess
    ) -> None:
        """While daemon B runs a session, daemon A refuses it; B killed with -9 mid-turn, A serves it with its
        history, the message B was answering included."""
        first = database_daemon(tmp_path / "a", database).start()
        second = database_daemon(tmp_path / "b", database).start()
        try:
            with second.client() as client:
                session_id = provider.create_session(client, str(tmp_path))
                assert attached_turn(client, session_id, NO_TOOLS)[-1].reason == "completed"
            shown = json.loads(run_cli(second.home, "inspect", "store", "--json").stdout)["details"]
            assert shown["leases_held"] == 1
            with first.client() as client, pytest.raises(RequestFailed) as refused:
                client.request(c.SendMessage(client.next_id(), session_id, "from A while B runs it, no tools"))
            assert refused.value.code == "unavailable" and "another host" in str(refused.value)
            deleting = run_cli(first.home, "sessions", "delete", session_id, "--yes")
            assert deleting.returncode != 0 and "another host" in deleting.stderr
            provider.push({"text": "never delivered", "delay_first_byte": 60})
            with second.client() as client:
                client.request(c.SendMessage(client.next_id(), session_id, "message B was answering, no tools"))
            _wait_for_path(second, lambda p: p.startswith(f"sessions/session:{session_id}/turn"))
            second.signal(signal.SIGKILL)
            second.wait(10)
            provider.reset()
            with first.client() as client:
                events = attached_turn(client, session_id, "after B died, no tools")
            assert events[-1].reason == "completed"
            texts = _stored_texts(first, session_id)
            assert NO_TOOLS in texts and "message B was answering, no tools" in texts and "after B died, no tools" in texts
            assert "from A while B runs it, no tools" not in texts
        finally:
            first.stop()
            second.stop()

    def test_the_password_is_never_shown(self, home: Path, database: str) -> None:
        """``inspect store`` shows where the store is, without the URL's password; the log never has it."""
        daemon = database_daemon(home, database).start()
        try:
            shown = run_cli(home, "inspect", "store", "--json").stdout
            details = json.loads(shown)["details"]
            assert details["path"].startswith("postgresql://postgres:***@")
            assert "pool_size" in details
            assert PASSWORD not in shown
        finally:
            daemon.stop()
        assert PASSWORD not in daemon.log()
