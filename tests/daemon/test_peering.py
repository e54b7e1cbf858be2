"""Daemons sharing PostgreSQL forward requests for a session another daemon runs, and relay its events;
a daemon that cannot prove the shared secret is refused."""

from __future__ import annotations

import json
import signal
import socket
from pathlib import Path

import pytest

from control.client import RequestFailed
from messages import control as c
from tests.daemon.helpers import (
    DaemonProcess,
    ScriptedProviderProcess,
    attached_turn,
    database_daemon,
    events_until_turn_finished,
    run_cli,
)
from tests.daemon.test_recovery import _stored_texts
from tests.daemon.test_sessions import NO_TOOLS

SECRET = "a-shared-secret-of-more-than-32-characters"


def _daemon(home: Path, url: str, secret: str | None = SECRET) -> DaemonProcess:
    return database_daemon(home, url, cluster=True, secret=secret)


class TestForwarding:
    """A client of daemon A reaches a session daemon B runs, as if it ran on A."""

    def test_attach_and_send_through_another_daemon(
        self, tmp_path: Path, postgres_url: str, provider: ScriptedProviderProcess
    ) -> None:
        first = _daemon(tmp_path / "a", postgres_url).start()
        second = _daemon(tmp_path / "b", postgres_url).start()
        try:
            with second.client() as client:
                session_id = provider.create_session(client, str(tmp_path))
                assert attached_turn(client, session_id, NO_TOOLS)[-1].reason == "completed"
                # Still attached here, so the session stays live on B.
                with first.client() as through_a:
                    attached = through_a.request(c.Attach(through_a.next_id(), session_id, None))
                    assert attached.session_id == session_id
                    reply = through_a.request(c.SendMessage(through_a.next_id(), session_id, "via A, no tools"))
                    assert reply.message.startswith("sent")
                    finished = events_until_turn_finished(through_a)[-1]
                    assert finished.reason == "completed" and "via A, no tools" in finished.final_text
                    # A forwarded request the owner refuses comes back as its error.
                    with pytest.raises(RequestFailed) as refused:
                        through_a.request(c.InterruptSession(through_a.next_id(), session_id))
                    assert refused.value.code != "unavailable"
                    assert "via A, no tools" in _stored_texts(second, session_id)
                    peers = json.loads(run_cli(second.home, "inspect", "cluster", "--json").stdout)["details"]
                    # One link for the attachment; the two requests shared one (kept idle between them).
                    assert peers["peers_accepted"] == 2 and peers["peers_refused"] == 0
                    tree = json.dumps(json.loads(run_cli(first.home, "tree", "--json").stdout))
                    assert f"sessions/session:{session_id}" not in tree
                    # The owner dies: the client attached through A is told, as a session's subscribers are.
                    second.signal(signal.SIGKILL)
                    dropped = through_a.receive()
                    assert type(dropped).__name__ == "SubscriberDropped" and "went away" in dropped.reason
        finally:
            first.stop()
            second.stop()

    def test_a_wrong_secret_is_refused(
        self, tmp_path: Path, postgres_url: str, provider: ScriptedProviderProcess
    ) -> None:
        owner = _daemon(tmp_path / "b", postgres_url).start()
        stranger = _daemon(tmp_path / "x", postgres_url, secret="another-secret-of-more-than-32-characters").start()
        try:
            with owner.client() as client:
                session_id = provider.create_session(client, str(tmp_path))
                client.request(c.Attach(client.next_id(), session_id, None))
                with stranger.client() as other, pytest.raises(RequestFailed) as refused:
                    other.request(c.SendMessage(other.next_id(), session_id, "let me in, no tools"))
            assert refused.value.code == "unavailable" and "refused the link" in str(refused.value)
            assert "refused a peer" in owner.log()
            assert "let me in" not in json.dumps(_stored_texts(owner, session_id))
            # Garbage instead of a proof: closed, counted, and the daemon goes on serving.
            address = json.loads(run_cli(owner.home, "inspect", "cluster", "--json").stdout)["details"]["address"]
            host, _, port = address.rpartition(":")
            with socket.create_connection((host, int(port)), timeout=10) as raw:
                raw.recv(65)
                raw.sendall(b"\x00not a proof" * 10)
                try:
                    closed = raw.recv(100) == b""
                except ConnectionResetError:  # closed with our garbage unread
                    closed = True
                assert closed
            details = json.loads(run_cli(owner.home, "inspect", "cluster", "--json").stdout)["details"]
            assert details["peers_refused"] == 2
        finally:
            owner.stop()
            stranger.stop()


class TestConfiguration:
    """The peer link is not opened half-configured."""

    @pytest.mark.parametrize(("secret", "store", "said"), [
        (None, True, "HERMES_ACTORS_CLUSTER_SECRET"),
        ("too short", True, "HERMES_ACTORS_CLUSTER_SECRET"),
        (SECRET, False, "needs store.url"),
    ])
    def test_refused_at_start(self, tmp_path: Path, postgres_url: str, secret: str | None, store: bool, said: str) -> None:
        daemon = _daemon(tmp_path / "h", postgres_url, secret=secret)
        if not store:
            (daemon.home / "config.yaml").write_text(json.dumps({"daemon": {"cluster_listen": "127.0.0.1:0"}}))
        daemon.start(wait=False)
        try:
            assert daemon.wait(30) != 0
            assert said in daemon.log()
        finally:
            daemon.stop()
