"""The daemon process: start, single instance, stale socket, stop, SIGTERM, background start; names
another local user took first."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from control.client import ControlClient
from control.errors import DaemonNotRunning
from control.paths import DaemonPaths
from messages import control as c
from messages.user_dir import user_dir_name
from tests.daemon.helpers import REPO, DaemonProcess, environment, run_cli
from tests.daemon.jailed import wait_until
from tests.terminal.helpers import pid_alive
from tools.jail.runtime import HOME_RECORD, RuntimeDir

#: Another local user, who takes our names first; and the ordinary user some daemons here run as.
SQUATTER = 4242
NOBODY = 65534


class TestStart:
    """A started daemon serves a private socket and reports itself."""

    def test_socket_is_private(self, daemon: DaemonProcess) -> None:
        """The socket is 0600 inside a 0700 run directory."""
        sock = daemon.paths.socket
        assert stat.S_ISSOCK(sock.lstat().st_mode)
        assert stat.S_IMODE(sock.lstat().st_mode) == 0o600
        assert stat.S_IMODE(daemon.paths.run_dir.stat().st_mode) == 0o700

    def test_status_reports_the_daemon(self, daemon: DaemonProcess) -> None:
        """`status --json` names the daemon's pid, home and socket."""
        result = run_cli(daemon.home, "status", "--json")
        assert result.returncode == 0, result.stderr
        import json

        data = json.loads(result.stdout)
        assert daemon.process is not None
        assert data["running"] is True
        assert data["pid"] == daemon.process.pid
        assert data["home"] == str(daemon.paths.home)
        assert data["socket"] == str(daemon.paths.socket)
        assert data["actors"] >= 3

    def test_status_without_daemon(self, home: Path) -> None:
        """`status` says no daemon runs and exits 1."""
        result = run_cli(home, "status", "--json")
        assert result.returncode == 1
        assert '"running": false' in result.stdout


class TestSingleInstance:
    """One daemon per home; a second one refuses with a clear message."""

    def test_second_daemon_refused(self, daemon: DaemonProcess) -> None:
        """A second daemon exits with status 3, naming the running one's pid."""
        assert daemon.process is not None
        result = run_cli(daemon.home, "daemon", timeout=20)
        assert result.returncode == 3
        assert "already running" in result.stderr
        assert f"pid {daemon.process.pid}" in result.stderr
        # The first daemon is unharmed.
        assert run_cli(daemon.home, "status").returncode == 0

    def test_stale_socket_is_replaced(self, home: Path) -> None:
        """A socket file left by a dead daemon is removed and the new daemon serves."""
        paths = DaemonPaths(home)
        paths.run_dir.mkdir(parents=True, mode=0o700)
        stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        stale.bind(str(paths.socket))
        stale.close()
        assert paths.socket.exists()
        daemon = DaemonProcess(home).start()
        try:
            with daemon.client() as client:
                assert isinstance(client.request(c.Status(client.next_id())), c.StatusReply)
            assert "removing stale control socket" in daemon.log()
        finally:
            daemon.stop()

    def test_long_home_uses_the_recorded_short_socket(self, tmp_path: Path) -> None:
        """A home too deep for a socket path gets the short private fallback, recorded in run/."""
        home = tmp_path / ("deep-" * 12) / "home"
        paths = DaemonPaths(home)
        assert paths.socket == paths.fallback_socket
        daemon = DaemonProcess(home).start()
        try:
            assert paths.socket_record.read_text().strip() == str(paths.fallback_socket)
            assert stat.S_IMODE(paths.fallback_socket.parent.stat().st_mode) == 0o700
            assert run_cli(home, "status").returncode == 0
        finally:
            daemon.stop()
        assert not paths.fallback_socket.exists()


class TestStop:
    """Stopping is graceful, bounded, and leaves no socket behind."""

    def test_stop_command(self, daemon: DaemonProcess) -> None:
        """`hermes-actors stop` ends the daemon with status 0 and removes the socket."""
        result = run_cli(daemon.home, "stop")
        assert result.returncode == 0, result.stderr
        assert daemon.wait(10) == 0
        assert not daemon.paths.socket.exists()
        assert "daemon stopped" in daemon.log()

    def test_stop_without_daemon(self, home: Path) -> None:
        """`stop` with nothing running says so and succeeds."""
        result = run_cli(home, "stop")
        assert result.returncode == 0
        assert "no daemon" in result.stdout

    def test_sigterm_is_graceful(self, daemon: DaemonProcess) -> None:
        """SIGTERM stops the daemon well within its bound, socket removed, reason logged."""
        client = daemon.client()
        started = time.monotonic()
        daemon.signal(signal.SIGTERM)
        assert daemon.wait(10) == 0
        assert time.monotonic() - started < 10
        assert not daemon.paths.socket.exists()
        assert "received SIGTERM" in daemon.log()
        # The open client sees its connection closed, not a hang.
        client.settimeout(5)
        try:
            while True:
                client.receive()
        except Exception as exc:  # noqa: BLE001 - any end of connection will do
            assert "closed" in str(exc) or "broke" in str(exc)
        client.close()

    def test_sigint_is_graceful(self, daemon: DaemonProcess) -> None:
        """SIGINT (Ctrl-C in a terminal) stops the daemon like SIGTERM."""
        daemon.signal(signal.SIGINT)
        assert daemon.wait(10) == 0
        assert not daemon.paths.socket.exists()


class TestBackgroundStart:
    """Commands start a daemon in the background when none runs; racing clients get one."""

    def test_two_clients_start_one_daemon(self, home: Path) -> None:
        """Two `sessions list` at once start exactly one background daemon, logging to logs/daemon.log."""
        argv = [sys.executable, "-m", "cli", "sessions", "list", "--json"]
        runs = [
            subprocess.Popen(argv, env=environment(home), cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for _ in range(2)
        ]
        try:
            outputs = [run.communicate(timeout=60) for run in runs]
            assert [run.returncode for run in runs] == [0, 0], outputs
            paths = DaemonPaths(home)
            pid = int(paths.lock_file.read_text())
            os.kill(pid, 0)  # alive
            log = paths.log_file.read_text()
            assert log.count("daemon ready") == 1
            assert "already running" not in log
        finally:
            stopped = run_cli(home, "stop")
        assert stopped.returncode == 0
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if not pid_alive(pid):
                break
            time.sleep(0.05)
        else:
            raise AssertionError("the background daemon did not stop")


class TestRefusesToStart:
    """A daemon that cannot work says why and exits without leaving a socket."""

    def test_bad_config_value(self, home: Path) -> None:
        """A mistyped config value is exit 2 with the key named."""
        home.mkdir(parents=True, mode=0o700)
        (home / "config.yaml").write_text("daemon:\n  max_running_turns: lots\n")
        result = run_cli(home, "daemon", timeout=30)
        assert result.returncode == 2
        assert "daemon.max_running_turns" in result.stderr

    def test_unusable_database(self, home: Path) -> None:
        """A state.db that is not a database is exit 1 with the store's reason; no socket is left."""
        home.mkdir(parents=True, mode=0o700)
        (home / "state.db").write_text("not a database at all\n" * 100)
        result = run_cli(home, "daemon", timeout=30)
        assert result.returncode == 1
        assert "daemon failed: store" in result.stderr
        assert "not a usable SQLite database" in result.stderr
        assert not DaemonPaths(home).socket.exists()


def _as_user(uid: int) -> list[str]:
    """``setpriv`` making the command run as ``uid`` with no groups (skips the test where it cannot)."""
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or setpriv is None:
        pytest.skip("needs root and setpriv to be another user")
    return [setpriv, f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]


@pytest.fixture
def shared_tmp() -> Iterator[Path]:
    """A temp directory every local user may write in (sticky, like /var/tmp), outside /tmp, this test's own.

    Short: the deepest sandbox socket leaves a per-user directory 46 bytes, so a temp directory deeper
    than ``/var/tmp/XXXXXXXX`` would send uid 65534's to /var/tmp itself.
    """
    base = Path(tempfile.mkdtemp(prefix="", dir="/var/tmp"))
    base.chmod(0o1777)
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _deep_home(base: Path, owner: int | None = None) -> Path:
    """A home too deep for run/control.sock: its control socket lives in the per-user directory too."""
    home = base / ("deep-" * 14) / "home"
    home.mkdir(parents=True, mode=0o700)
    if owner is not None:
        os.chown(home, owner, owner)
    return home


def _squat(base: Path, uid: int, kind: str) -> tuple[Path, Path]:
    """Take ``hermes-actors-<uid>`` in ``base`` as the squatter: their directory with a file in it, or a
    symlink to a directory of the victim's. Returns the name and the directory whose contents must stay."""
    name = base / user_dir_name(uid)
    if kind == "symlink":
        target = base / "target"
        target.mkdir(mode=0o700)
        (target / "keep").write_text("x")
        os.chown(target, uid, uid)
        os.symlink(target, name)
        os.chown(name, SQUATTER, SQUATTER, follow_symlinks=False)
        return name, target
    name.mkdir(mode=0o700)
    (name / "theirs").write_text("x")
    for path in (name, name / "theirs"):
        os.chown(path, SQUATTER, SQUATTER)
    return name, name


def _daemon(home: Path, base: Path, runner: list[str] | None = None) -> DaemonProcess:
    """A daemon (not started) whose temp directory is ``base``, without XDG_RUNTIME_DIR."""
    daemon = DaemonProcess(home)
    daemon.extra_env = {"TMPDIR": str(base), "XDG_RUNTIME_DIR": "", "HOME": str(home)}
    daemon.runner = runner or []
    return daemon


class TestSquattedNames:
    """Another local user who takes the per-user directory's name first never stops the daemon: it runs in
    a private directory of its own, which the home records for clients and the next start."""

    @pytest.mark.parametrize("kind", ["directory", "symlink"])
    def test_the_daemon_starts_and_a_client_finds_it(self, shared_tmp: Path, kind: str) -> None:
        """Started twice: both times in the same recorded 0700 directory of ours beside the squatted name,
        the control socket (0600) in it, reached by a CLI with none of the daemon's environment; what
        holds the name is never followed nor touched."""
        squatted, kept = _squat(shared_tmp, os.getuid(), kind)
        before = (squatted.lstat(), sorted(os.listdir(kept)))
        home = _deep_home(shared_tmp)
        for start in range(2):
            daemon = _daemon(home, shared_tmp).start()
            try:
                claimed = Path(daemon.paths.user_dir_record.read_text().strip())
                assert claimed.parent == shared_tmp and claimed.name.startswith(user_dir_name() + ".")
                info = claimed.lstat()
                assert stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and stat.S_IMODE(info.st_mode) == 0o700
                assert daemon.paths.socket.parent == claimed
                assert stat.S_IMODE(daemon.paths.socket.lstat().st_mode) == 0o600
                runtime = RuntimeDir.for_home(home, claimed)
                assert Path(runtime.path, HOME_RECORD).read_text() == f"{home}\n"
                result = run_cli(home, "status")
                assert result.returncode == 0, result.stderr
                if start == 0:
                    first = claimed
                assert claimed == first
            finally:
                daemon.stop()
        reason = f"belongs to uid {SQUATTER}" if kind == "directory" else "is a symlink"
        assert daemon.log().count(f"cannot use {squatted}: it {reason} (left alone); using {first} instead") == 1
        assert (squatted.lstat(), sorted(os.listdir(kept))) == before

    def test_as_an_ordinary_user(self, shared_tmp: Path) -> None:
        """The same as uid 65534 against a directory of uid 4242: the daemon serves from a private
        directory of its own, and the user's CLI reaches it, before and after a restart."""
        runner = _as_user(NOBODY)
        squatted, _ = _squat(shared_tmp, NOBODY, "directory")
        home = _deep_home(shared_tmp, owner=NOBODY)
        paths = DaemonPaths(home)
        claimed = []
        for _ in range(2):
            daemon = _daemon(home, shared_tmp, runner).start(wait=False)
            try:
                # Root cannot talk to a daemon of uid 65534 (which refuses other users): wait for its socket,
                # where the record says (root does not take uid 65534's directory for its own).
                wait_until(paths.user_dir_record.exists, 20, "the daemon's record")
                claimed.append(Path(paths.user_dir_record.read_text().strip()))
                socket_path = claimed[-1] / f"{paths.home_digest}.sock"
                wait_until(socket_path.exists, 20, "the daemon's socket")
                info = claimed[-1].lstat()
                assert info.st_uid == NOBODY and stat.S_IMODE(info.st_mode) == 0o700
                assert socket_path.lstat().st_uid == NOBODY
                status = subprocess.run(
                    [*runner, sys.executable, "-m", "cli", "status", "--json"],
                    env=environment(home), cwd=REPO, capture_output=True, text=True, timeout=30,
                )  # fmt: skip
                assert status.returncode == 0, status.stderr + daemon.log()
                assert json.loads(status.stdout)["socket"] == str(socket_path)
            finally:
                daemon.stop()
        assert claimed[0] == claimed[1] and claimed[0].parent == shared_tmp
        assert f"cannot use {squatted}: it belongs to uid {SQUATTER}" in daemon.log()
        assert squatted.lstat().st_uid == SQUATTER and os.listdir(squatted) == ["theirs"]

    def test_a_client_never_talks_to_another_users_socket(
        self, shared_tmp: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Before a daemon of ours recorded its directory, a client looks where a first start would put it:
        a socket another user planted there (answering like a daemon) is refused before a byte is sent."""
        runner = _as_user(SQUATTER)
        monkeypatch.setattr(tempfile, "tempdir", str(shared_tmp))
        monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
        squatted = shared_tmp / user_dir_name()
        squatted.mkdir(mode=0o755)
        os.chown(squatted, SQUATTER, SQUATTER)
        paths = DaemonPaths(_deep_home(shared_tmp))
        assert paths.socket.parent == squatted
        script = textwrap.dedent(
            f"""
            import json, socket, sys
            listener = socket.socket(socket.AF_UNIX)
            listener.bind({str(paths.socket)!r})
            listener.listen()
            print("ready", flush=True)
            peer, _ = listener.accept()
            welcome = {{"type": "Welcome", "version": {c.PROTOCOL_VERSION!r}, "daemon_pid": 1, "connection": "conn:1"}}
            try:
                peer.sendall(json.dumps(welcome).encode() + b"\\n")
            except OSError:
                pass
            peer.settimeout(10)
            try:
                received = peer.recv(65536).decode()
            except ConnectionResetError:  # closed with our Welcome unread
                received = ""
            print(json.dumps(received), flush=True)
            """
        )
        with subprocess.Popen(
            [*runner, sys.executable, "-c", script], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True
        ) as impostor:
            try:
                assert impostor.stdout is not None and impostor.stdout.readline() == "ready\n"
                with pytest.raises(DaemonNotRunning, match=f"served by uid {SQUATTER}, not by a daemon of ours"):
                    ControlClient.connect(paths, timeout=10)
                assert json.loads(impostor.stdout.readline()) == ""
            finally:
                impostor.kill()
