"""Two daemons on one PostgreSQL as one cluster: a new session goes to the less-loaded daemon, paths work
from either, and a cut peer link never makes two owners."""

from __future__ import annotations

import json
import re
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from control.client import RequestFailed
from messages import control as c
from tests.daemon.helpers import (
    DaemonProcess,
    ScriptedProviderProcess,
    attached_turn,
    cli_json,
    events_until_turn_finished,
    inspect_json,
    run_cli,
    wait_for,
)
from tests.daemon.test_peering import _daemon
from tests.daemon.test_sessions import NO_TOOLS


def _leases(daemon: DaemonProcess) -> int:
    return int(inspect_json(daemon.home, "store")["details"]["leases_held"])


def _daemon_with(home: Path, url: str, section: str, **settings: Any) -> DaemonProcess:
    """A linked daemon (not started) with more settings in one section of its ``config.yaml``."""
    daemon = _daemon(home, url)
    config = json.loads((home / "config.yaml").read_text())
    config.setdefault(section, {}).update(settings)
    (home / "config.yaml").write_text(json.dumps(config))
    return daemon


@pytest.fixture
def pair(tmp_path: Path, postgres_url: str) -> Iterator[tuple[DaemonProcess, DaemonProcess]]:
    """Daemons A and B, linked, on one fresh database."""
    first = _daemon(tmp_path / "a", postgres_url).start()
    second = _daemon(tmp_path / "b", postgres_url).start()
    try:
        yield first, second
    finally:
        first.stop()
        second.stop()


class TestPlacement:
    """A client of A creates sessions; the second runs on B; A's tree, inspect and kill reach it."""

    def test_a_new_session_goes_to_the_less_loaded_daemon(
        self, tmp_path: Path, pair: tuple[DaemonProcess, DaemonProcess], provider: ScriptedProviderProcess
    ) -> None:
        first, second = pair
        with first.client() as client:
            here = provider.create_session(client, str(tmp_path))
            there = provider.create_session(client, str(tmp_path))
            assert (_leases(first), _leases(second)) == (1, 1)
            assert f"sessions/session:{there}" in json.dumps(cli_json(second, "tree"))
            assert f"sessions/session:{there}" not in json.dumps(cli_json(first, "tree"))
            assert cli_json(first, "inspect", "cluster")["details"]["owners_remembered"] == 1
            # Through A, the session on B is attached, talked to, inspected and shown as a tree.
            assert attached_turn(client, there, NO_TOOLS)[-1].reason == "completed"
            assert cli_json(first, "tree", there)["tree"]["path"] == f"sessions/session:{there}"
            assert cli_json(first, "inspect", f"sessions/session:{there}")["details"]["turns"] == 1
            killed = run_cli(first.home, "kill", there)
            assert killed.returncode == 0 and "stopping" in killed.stdout, killed.stderr
            wait_for("B's session stopping", lambda: _leases(second) == 0)
            # B told everyone it gave the lease back (NOTIFY): A forgets where the session ran, so its
            # next message wakes it on A rather than going to B.
            wait_for("A forgetting", lambda: inspect_json(first.home, "cluster")["details"]["owners_remembered"] == 0)
            client.request(c.SendMessage(client.next_id(), there, "back on A, no tools"))
            assert (_leases(first), _leases(second)) == (2, 0) and here


class _Link:
    """A TCP proxy in front of B's peer link that can be cut (connections closed, new ones refused)."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.address = "127.0.0.1:%d" % self._listener.getsockname()[1]
        self.target: tuple[str, int] | None = None
        self.cut = False
        self._open: list[socket.socket] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                inbound, _ = self._listener.accept()
            except OSError:
                return
            if self.cut or self.target is None:
                inbound.close()
                continue
            outbound = socket.create_connection(self.target)
            with self._lock:
                self._open += [inbound, outbound]
            for source, sink in ((inbound, outbound), (outbound, inbound)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        for end in (source, sink):
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def sever(self) -> None:
        """The partition: every connection through the link closed, new ones refused."""
        self.cut = True
        with self._lock:
            opened, self._open = self._open, []
        for end in opened:
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            end.close()

    def close(self) -> None:
        """Stop the proxy."""
        self.sever()
        self._listener.close()


@pytest.fixture
def link() -> Any:
    proxy = _Link()
    yield proxy
    proxy.close()


class TestPartition:
    """B's peer link cut while its database connection stays: A refuses B's session, never takes it."""

    def test_a_cut_link_never_makes_two_owners(
        self, tmp_path: Path, postgres_url: str, provider: ScriptedProviderProcess, link: _Link
    ) -> None:
        first = _daemon(tmp_path / "a", postgres_url)
        second = _daemon_with(tmp_path / "b", postgres_url, "daemon", cluster_advertise=link.address)
        first.start()
        second.start()
        try:
            listening = wait_for("B's peer link", lambda: re.search(r"peer link listening on 127\.0\.0\.1:(\d+)", second.log()))
            link.target = ("127.0.0.1", int(listening.group(1)))
            with second.client() as on_b:
                session_id = provider.create_session(on_b, str(tmp_path))
                on_b.request(c.Attach(on_b.next_id(), session_id, None))
                with first.client() as on_a:
                    on_a.request(c.SendMessage(on_a.next_id(), session_id, "through the link, no tools"))
                assert events_until_turn_finished(on_b)[-1].reason == "completed"
                link.sever()
                with first.client() as on_a, pytest.raises(RequestFailed) as refused:
                    on_a.request(c.SendMessage(on_a.next_id(), session_id, "from A in the partition, no tools"))
                assert refused.value.code == "unavailable"
                assert (_leases(first), _leases(second)) == (0, 1)
                # B goes on serving its session to its own clients meanwhile.
                on_b.request(c.SendMessage(on_b.next_id(), session_id, "on B during the partition, no tools"))
                assert events_until_turn_finished(on_b)[-1].reason == "completed"
                link.cut = False
                with first.client() as on_a:
                    on_a.request(c.SendMessage(on_a.next_id(), session_id, "after the partition, no tools"))
                assert events_until_turn_finished(on_b)[-1].reason == "completed"
                assert (_leases(first), _leases(second)) == (0, 1)
                texts = json.dumps(cli_json(second, "sessions", "show", session_id, "--head", "100"))
                assert "from A in the partition" not in texts and "after the partition" in texts
        finally:
            first.stop()
            second.stop()


class TestLinks:
    """Forwarded requests reuse an idle authenticated link; one the peer closed is never used."""

    def test_an_idle_link_the_peer_closed_is_replaced(
        self, tmp_path: Path, pair: tuple[DaemonProcess, DaemonProcess], provider: ScriptedProviderProcess
    ) -> None:
        first, second = pair
        with second.client() as client:
            session_id = provider.create_session(client, str(tmp_path))
            for _ in range(3):
                assert cli_json(first, "inspect", session_id)["path"] == f"sessions/session:{session_id}"
            cluster = cli_json(second, "tree", "cluster")["tree"]
            assert [peer["path"] for peer in cluster["children"]] == ["cluster/peer:1"]
            assert run_cli(second.home, "kill", "cluster/peer:1").returncode == 0
            wait_for("B closing the link", lambda: not cli_json(second, "tree", "cluster")["tree"]["children"])
            assert cli_json(first, "inspect", session_id)["path"] == f"sessions/session:{session_id}"
            assert cli_json(second, "inspect", "cluster")["details"]["peers_accepted"] == 2


class TestHostsInACluster:
    """A daemon whose sessions run in host processes is one peer: its hosts' leases name its front."""

    def test_a_peer_reaches_a_session_on_another_daemons_host(
        self, tmp_path: Path, postgres_url: str, provider: ScriptedProviderProcess
    ) -> None:
        first = _daemon(tmp_path / "a", postgres_url)
        second = _daemon_with(tmp_path / "b", postgres_url, "daemon", hosts=2)
        first.start()
        second.start()
        try:
            with second.client() as on_b:
                session_id = provider.create_session(on_b, str(tmp_path))
            host = next(
                node["path"] for node in cli_json(second, "tree", "hosts")["tree"]["children"]
                if f"session:{session_id}" in json.dumps(node)
            )
            with first.client() as on_a:
                assert attached_turn(on_a, session_id, NO_TOOLS)[-1].reason == "completed"
            assert cli_json(second, "inspect", f"{host}/sessions/session:{session_id}")["details"]["turns"] == 1
            assert (_leases(first), cli_json(second, "inspect", f"{host}/store")["details"]["leases_held"]) == (0, 1)
        finally:
            first.stop()
            second.stop()


class TestFencing:
    """An owner whose lease connection died, and which has not noticed yet, cannot write once another daemon
    has taken its session over."""

    def test_the_old_owner_cannot_write_into_the_new_owners_session(
        self, tmp_path: Path, postgres_url: str, provider: ScriptedProviderProcess
    ) -> None:
        first = _daemon(tmp_path / "a", postgres_url)
        # B never notices the loss by itself here.
        second = _daemon_with(tmp_path / "b", postgres_url, "store", lease_check_seconds=3600)
        first.start()
        second.start()
        try:
            with second.client() as on_b:
                session_id = provider.create_session(on_b, str(tmp_path))
                assert attached_turn(on_b, session_id, NO_TOOLS)[-1].reason == "completed"
                assert second.process is not None
                # With a timeout it returns once the backend has exited, its advisory locks released; without
                # one it returns at once, and under load A could ask before B's leases were gone.
                with psycopg.connect(postgres_url, autocommit=True) as admin:
                    admin.execute(
                        "SELECT pg_terminate_backend(lease_pid, 10000) FROM hermes.hosts WHERE name LIKE %s",
                        (f"%:{second.process.pid}",),
                    )
                with first.client() as on_a:
                    assert attached_turn(on_a, session_id, "A took over, no tools")[-1].reason == "completed"
                assert _leases(first) == 1
                # B still runs its copy; its next message is refused at the store, and nothing of it lands.
                try:
                    on_b.request(c.SendMessage(on_b.next_id(), session_id, "B after losing it, no tools"))
                    events_until_turn_finished(on_b)
                except RequestFailed:
                    pass
            texts = json.dumps(cli_json(first, "sessions", "show", session_id, "--head", "100"))
            assert "A took over" in texts and "B after losing it" not in texts
            assert "another host has taken its lease" in second.log()
        finally:
            first.stop()
            second.stop()
