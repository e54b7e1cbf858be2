"""JailPolicy's read and write rules on a real file system with real symlinks."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from config.sandbox import SandboxConfig
from tests.jail.world import World, make_world
from tools.jail import HiddenPath, JailPolicy, PathRefused, SandboxMode
from tools.jail.attachments import check_files

ALL_MODES = list(SandboxMode)
JAILED = [SandboxMode.READ_ONLY, SandboxMode.WORKSPACE_WRITE]


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    yield from make_world()


HOME_FILES = [".env", "state.db", "SOUL.md", "memories/MEMORY.md", "logs/daemon.log", "run/control.sock", "run"]


class TestHiddenFromReads:
    """The home, other sessions and sandbox.deny_read are unreadable in every mode, and the refusal names the rule."""

    @pytest.mark.parametrize("mode", ALL_MODES)
    @pytest.mark.parametrize("rel", HOME_FILES)
    def test_home(self, world: World, mode: SandboxMode, rel: str) -> None:
        path = str(world.home / rel)
        with pytest.raises(PathRefused) as refused:
            world.policy(mode).check_read(path)
        assert (
            f"Refused by the sandbox policy: {path} is hidden from tools "
            "(the daemon's home, HERMES_ACTORS_HOME, is always hidden)."
        ) == str(refused.value)

    @pytest.mark.parametrize("mode", ALL_MODES)
    def test_other_session(self, world: World, mode: SandboxMode) -> None:
        with pytest.raises(PathRefused, match="other sessions' and sandboxes' directories are always hidden"):
            world.policy(mode).check_read(str(world.root / "runtime/other-session/tmp/their.txt"))

    @pytest.mark.parametrize("mode", ALL_MODES)
    def test_deny_read(self, world: World, mode: SandboxMode) -> None:
        with pytest.raises(PathRefused, match=r"\(~/\.ssh is listed in sandbox\.deny_read\)\.$"):
            world.policy(mode).check_read(str(world.user / ".ssh/id_ed25519"))

    def test_trimmed_deny_read_is_readable(self, world: World) -> None:
        """A user who trims deny_read gets the path back; the home stays hidden whatever the config."""
        policy = world.policy(SandboxMode.WORKSPACE_WRITE, SandboxConfig(deny_read=()))
        key = str(world.user / ".ssh/id_ed25519")
        assert key == policy.check_read(key)
        with pytest.raises(PathRefused):
            policy.check_read(str(world.home / ".env"))

    @pytest.mark.parametrize("mode", ALL_MODES)
    @pytest.mark.parametrize(
        ("link", "target"),
        [
            ("env-link", "hermes/.env"),
            ("ssh-link/id_ed25519", "user/.ssh/id_ed25519"),
            ("home-link/SOUL.md", "hermes/SOUL.md"),
        ],
    )
    def test_symlink_into_hidden(self, world: World, mode: SandboxMode, link: str, target: str) -> None:
        """A symlink in the workspace is resolved first; the refusal shows both names."""
        with pytest.raises(PathRefused) as refused:
            world.policy(mode).check_read(str(world.workspace / link))
        assert f"{world.workspace / link} (resolves to {world.root / target}) is hidden" in str(refused.value)

    @pytest.mark.parametrize("mode", ALL_MODES)
    def test_dotdot_into_hidden(self, world: World, mode: SandboxMode) -> None:
        with pytest.raises(PathRefused, match="HERMES_ACTORS_HOME"):
            world.policy(mode).check_read(f"{world.workspace}/sub/../../hermes/./.env")

    @pytest.mark.parametrize("mode", ALL_MODES)
    def test_own_tmp_and_skills_readable(self, world: World, mode: SandboxMode) -> None:
        """The session's temp directory (in the runtime directory) and the skills (in the home) stay readable."""
        policy = world.policy(mode)
        skill = str(world.home / "skills/demo/run.py")
        assert skill == policy.check_read(skill)
        assert str(world.tmp_dir) == policy.check_read(str(world.tmp_dir))

    def test_deepest_rule_wins(self, world: World) -> None:
        """A hidden home inside an allowed temp directory stays hidden (a full-access context with tmp_dir /)."""
        policy = JailPolicy(
            mode=SandboxMode.FULL_ACCESS,
            workspace=str(world.workspace),
            tmp_dir=str(world.root),
            hidden=(HiddenPath(str(world.home), "home"),),
        )
        with pytest.raises(PathRefused):
            policy.check_read(str(world.home / ".env"))
        assert str(world.root / "outside/other.txt") == policy.check_read(str(world.root / "outside/other.txt"))


class TestWritableRoots:
    """Jailed modes write only inside their roots; full-access writes anywhere but hidden paths."""

    @pytest.mark.parametrize("mode", ALL_MODES)
    def test_home_never_writable(self, world: World, mode: SandboxMode) -> None:
        with pytest.raises(PathRefused, match="HERMES_ACTORS_HOME"):
            world.policy(mode).check_write(str(world.home / "SOUL.md"))

    @pytest.mark.parametrize("mode", ALL_MODES)
    def test_skills_read_only(self, world: World, mode: SandboxMode) -> None:
        with pytest.raises(PathRefused, match="is read-only for tools"):
            world.policy(mode).check_write(str(world.home / "skills/demo/run.py"))

    def test_workspace_write(self, world: World) -> None:
        policy = world.policy(SandboxMode.WORKSPACE_WRITE)
        assert str(world.workspace / "new.py") == policy.check_write(str(world.workspace / "new.py"))
        assert str(world.tmp_dir / "x.py") == policy.check_write("/tmp/x.py")
        outside = str(world.root / "outside/new.txt")
        with pytest.raises(PathRefused) as refused:
            policy.check_write(outside)
        assert (
            f"Refused by the sandbox policy: {outside} is outside the writable roots of this workspace-write "
            f"session (/tmp, {world.workspace}); more can be added with sandbox.writable_roots."
        ) == str(refused.value)

    def test_writable_roots_config(self, world: World) -> None:
        policy = world.policy(SandboxMode.WORKSPACE_WRITE, SandboxConfig(writable_roots=(str(world.root / "outside"),)))
        assert str(world.root / "outside/new.txt") == policy.check_write(str(world.root / "outside/new.txt"))

    def test_read_only_has_only_tmp(self, world: World) -> None:
        policy = world.policy(SandboxMode.READ_ONLY)
        assert str(world.tmp_dir / "x") == policy.check_write("/tmp/x")
        with pytest.raises(PathRefused) as refused:
            policy.check_write(str(world.workspace / "code.py"))
        assert str(refused.value).endswith("outside the writable roots of this read-only session (/tmp).")

    @pytest.mark.parametrize("mode", JAILED)
    def test_dotdot_out_of_workspace(self, world: World, mode: SandboxMode) -> None:
        with pytest.raises(PathRefused, match="outside the writable roots"):
            world.policy(mode).check_write(f"{world.workspace}/../outside/x.txt")

    def test_symlink_out_of_workspace(self, world: World) -> None:
        """Writing through a workspace symlink that points outside is judged by where it points."""
        with pytest.raises(PathRefused, match="resolves to"):
            world.policy(SandboxMode.WORKSPACE_WRITE).check_write(str(world.workspace / "outside-link"))

    def test_full_access_writes_outside(self, world: World) -> None:
        policy = world.policy(SandboxMode.FULL_ACCESS)
        assert str(world.root / "outside/x") == policy.check_write(str(world.root / "outside/x"))
        with pytest.raises(PathRefused, match="deny_read"):
            policy.check_write(str(world.user / ".ssh/authorized_keys"))


class TestPrivateTmp:
    """A jailed session's /tmp is its own temp directory, as the jail mounts it."""

    @pytest.mark.parametrize("path", ["/tmp/x.py", "//tmp/x.py", "/tmp/../tmp/./x.py", "///tmp//x.py"])
    def test_tmp_maps_to_session_tmp(self, world: World, path: str) -> None:
        assert f"{world.tmp_dir}/x.py" == world.policy(SandboxMode.WORKSPACE_WRITE).host_path(path)

    def test_tmp_itself(self, world: World) -> None:
        assert str(world.tmp_dir) == world.policy(SandboxMode.READ_ONLY).host_path("/tmp")

    def test_full_access_tmp_is_the_hosts(self, world: World) -> None:
        assert "/tmp/x.py" == world.policy(SandboxMode.FULL_ACCESS).host_path("/tmp/x.py")

    def test_workspace_under_tmp_keeps_its_path(self, world: World) -> None:
        """A workspace under the host's /tmp is bound over the private /tmp at its own path."""
        policy = JailPolicy(mode=SandboxMode.WORKSPACE_WRITE, workspace="/tmp/proj", tmp_dir=str(world.tmp_dir))
        assert "/tmp/proj/a.py" == policy.host_path("/tmp/proj/a.py")
        assert f"{world.tmp_dir}/projx" == policy.host_path("/tmp/projx")


class TestResolve:
    """Paths resolve as the kernel in the jail resolves them: symlinks first, then `..`."""

    @pytest.mark.parametrize("mode", ALL_MODES)
    def test_dotdot_after_symlink(self, world: World, mode: SandboxMode) -> None:
        """`home-link/..` is the parent of the home (where the link points), not the workspace."""
        assert str(world.root / "outside") == world.policy(mode).check_read(f"{world.workspace}/home-link/../outside")

    @pytest.mark.parametrize("mode", ALL_MODES)
    def test_symlink_loop_refused(self, world: World, mode: SandboxMode) -> None:
        with pytest.raises(PathRefused, match="follows a symlink loop"):
            world.policy(mode).check_read(f"{world.workspace}/loop-a/../../hermes/.env")

    def test_absolute_link_to_tmp_follows_the_jail(self, world: World, tmp_path: Path) -> None:
        """A symlink to /tmp/x leads to the session's /tmp/x when jailed, to the host's in full-access."""
        link = world.workspace / "to-tmp"
        link.symlink_to("/tmp/x.py")
        try:
            assert f"{world.tmp_dir}/x.py" == world.policy(SandboxMode.WORKSPACE_WRITE).check_write(str(link))
            assert "/tmp/x.py" == world.policy(SandboxMode.FULL_ACCESS).check_write(str(link))
        finally:
            link.unlink()

    def test_dotdot_out_of_private_tmp(self, world: World) -> None:
        """`/tmp/..` is the jail's root, not the parent of the session's temp directory (the runtime dir)."""
        policy = world.policy(SandboxMode.WORKSPACE_WRITE)
        assert str(world.workspace / "code.py") == policy.check_read(f"/tmp/..{world.workspace}/code.py")


SEGMENTS = ["..", ".", "", "ws", "hermes", ".env", "SOUL.md", "env-link", "home-link", "ssh-link", "loop-a",
            "user", ".ssh", "id_ed25519", "runtime", "other-session", "tmp", "sub", "outside"]  # fmt: skip


def _inodes(*roots: Path) -> set[tuple[int, int]]:
    found: set[tuple[int, int]] = set()
    for root in roots:
        for directory, dirs, files in os.walk(root):
            for name in [".", *dirs, *files]:
                info = os.stat(os.path.join(directory, name), follow_symlinks=False)
                found.add((info.st_dev, info.st_ino))
    return found


class TestPathTricks:
    """Whatever mix of `..`, `.`, `//` and symlinks (loops included) a path holds, what it reaches decides."""

    @pytest.mark.parametrize("mode", ALL_MODES)
    @settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(parts=st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=7), slashes=st.sampled_from(["/", "//"]))
    @example(parts=["..", "..", "..", "..", "tmp"], slashes="/")  # out of the world to the host's /tmp
    def test_hidden_files_never_pass(self, world: World, mode: SandboxMode, parts: list[str], slashes: str) -> None:
        """Any path that reaches a hidden file (by inode, not by name) is refused; a path that passes reaches
        the same file as the returned host path, as the jail sees it (its ``/tmp`` is the session's own)."""
        hidden = _inodes(world.home / ".env", world.home / "SOUL.md", world.home / "memories", world.user / ".ssh",
                         world.root / "runtime/other-session")  # fmt: skip
        path = slashes + str(world.workspace).lstrip("/") + "/" + "/".join(parts)
        policy = world.policy(mode)
        try:
            reached = os.stat(path)
        except OSError:
            reached = None
        if reached is not None and (reached.st_dev, reached.st_ino) in hidden:
            with pytest.raises(PathRefused):
                policy.check_read(path)
            return
        try:
            real = policy.check_read(path)
        except PathRefused:
            return  # a directory of the home itself, say: refused without reaching a hidden file
        if reached is not None:
            assert os.path.realpath(policy.host_path(os.path.realpath(path))) == os.path.realpath(real)


class TestRelativePath:
    """A relative path is a caller's mistake: tools make paths absolute against the shell's cwd first."""

    def test_refused_loudly(self, world: World) -> None:
        with pytest.raises(ValueError, match="must be absolute"):
            world.policy(SandboxMode.WORKSPACE_WRITE).check_read("code.py")


class TestTmpBinds:
    """The paths kept at their own place under /tmp are exactly those the jail binds over its private /tmp."""

    @pytest.mark.parametrize(
        ("mode", "root_kept"), [(SandboxMode.WORKSPACE_WRITE, True), (SandboxMode.READ_ONLY, False)]
    )
    def test_writable_root_under_tmp(self, world: World, mode: SandboxMode, root_kept: bool) -> None:
        """A writable root under /tmp is bound (at its own path) only where it is writable."""
        policy = JailPolicy(
            mode=mode, workspace="/tmp/proj", tmp_dir=str(world.tmp_dir), writable_roots=("/tmp/cache",)
        )
        assert "/tmp/proj/a" == policy.host_path("/tmp/proj/a")
        assert ("/tmp/cache/a" if root_kept else f"{world.tmp_dir}/cache/a") == policy.host_path("/tmp/cache/a")

    def test_host_tmp_hidden_when_jailed(self, world: World) -> None:
        """The host's /tmp, out of a jailed process's sight, is out of the file tools' too; not in full-access."""
        jailed = JailPolicy(mode=SandboxMode.WORKSPACE_WRITE, workspace="/tmp/proj", tmp_dir="/tmp/rt/me")
        assert "the host's /tmp is out of sight" in jailed.hiding_rule("/tmp/other/x").rule  # type: ignore[union-attr]  # not None here, or the assertion fails, as it should
        assert None is jailed.hiding_rule("/tmp/proj/x")
        assert None is jailed.hiding_rule("/tmp/rt/me/x")
        assert "/tmp" in jailed.hidden_within("/")
        assert () == jailed.hidden_within("/tmp/proj")
        free = JailPolicy(mode=SandboxMode.FULL_ACCESS, workspace="/tmp/proj", tmp_dir="/tmp/rt/me")
        assert None is free.hiding_rule("/tmp/other/x")
        assert "/tmp" not in free.hidden_within("/")


#: Paths into /proc, directly or through the links that lead there.
PROC_PATHS = [
    ("/proc/self/mountinfo", "/proc/self/mountinfo"),
    ("/proc/thread-self/environ", "/proc/thread-self/environ"),
    # The machine's init: a pid that always exists and is the same in every test worker (collection must agree).
    ("/proc/1/environ", "/proc/1/environ"),
    ("/proc", "/proc"),
    ("/proc/self/root/etc/hostname", "/proc/self/root/etc/hostname"),
    ("/dev/fd/0", "/proc/self/fd/0"),
    ("/dev/stdin", "/proc/self/fd/0"),
    ("/etc/../proc/self/status", "/proc/self/status"),
]


class TestProcRefused:
    """/proc is refused to the file tools in every mode (they run in the daemon), saying why and what to do instead."""

    @pytest.mark.parametrize("mode", ALL_MODES)
    @pytest.mark.parametrize(("path", "real"), PROC_PATHS)
    def test_read(self, world: World, mode: SandboxMode, path: str, real: str) -> None:
        """Nothing in /proc is followed (/proc/self is the daemon to the file tools): the refusal names the path."""
        named = path if path == real else f"{path} (resolves to {real})"
        with pytest.raises(PathRefused) as refused:
            world.policy(mode).check_read(path)
        assert (
            f"Refused by the sandbox policy: {named} is hidden from tools (the file tools run in the daemon, so "
            "/proc would describe the daemon, not this session; read it with the terminal tool instead, whose "
            "commands run as the session's own processes, in its jail when it has one)."
        ) == str(refused.value)

    @pytest.mark.parametrize("mode", ALL_MODES)
    def test_write(self, world: World, mode: SandboxMode) -> None:
        with pytest.raises(PathRefused, match="the file tools run in the daemon"):
            world.policy(mode).check_write("/proc/self/comm")

    @pytest.mark.parametrize("mode", ALL_MODES)
    @pytest.mark.parametrize("target", ["/proc/self/environ", "../../../../../../../../proc/self/mountinfo", "/dev/fd"])
    def test_symlink_leading_there(self, world: World, mode: SandboxMode, target: str) -> None:
        link = world.workspace / "to-proc"
        link.symlink_to(target)
        try:
            with pytest.raises(PathRefused, match=r"to-proc \(resolves to /proc/self/.*the file tools run in the daemon"):
                world.policy(mode).check_read(str(link))
        finally:
            link.unlink()

    @pytest.mark.parametrize("mode", ALL_MODES)
    def test_walks_leave_it_out(self, world: World, mode: SandboxMode) -> None:
        """A search from / never walks into /proc."""
        assert "/proc" in world.policy(mode).hidden_within("/")
        assert "/proc" not in world.policy(mode).hidden_within(str(world.root))

    @pytest.mark.parametrize("mode", ALL_MODES)
    def test_attachment(self, world: World, mode: SandboxMode) -> None:
        """A reply's MEDIA:/proc/self/environ is not sent (the daemon would read its own environment)."""
        [check] = check_files(world.policy(mode), ["/proc/self/environ"])
        assert check.host_path is None and "the file tools run in the daemon" in str(check.refusal)

    @pytest.mark.parametrize("mode", JAILED)
    def test_jailed_process_may_start_there(self, world: World, mode: SandboxMode) -> None:
        """A jailed shell that changed into /proc starts its next command there: the jail mounts its own."""
        policy = world.policy(mode)
        assert "/proc/self" == policy.check_cwd("/proc/self")
        with pytest.raises(PathRefused, match="HERMES_ACTORS_HOME"):
            policy.check_cwd(str(world.home))
