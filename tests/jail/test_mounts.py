"""A policy as the jail enforces it, checked from inside real bwrap jails."""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from config.sandbox import SandboxConfig
from tests.jail.fixtures import policy_for
from tests.jail.helpers import BASE_ENV, run
from tools.jail import Launcher, PathRefused, SandboxMode
from tools.jail._mounts import _INTERPRETER_PREFIXES

pytestmark = pytest.mark.usefixtures("needs_jail")


@pytest.fixture
def needs_jail(launcher: Launcher) -> None:
    """Skip where no jail can run (CI without user namespaces)."""
    if not launcher.status.available:
        pytest.skip(f"no jail can run here: {launcher.status.error}")


@pytest.fixture
def user_home() -> Iterator[Path]:
    """A fake user home with credential stores, outside the workspace and outside /tmp (so visible)."""
    home = Path(tempfile.mkdtemp(prefix="hx-home-", dir="/var/tmp"))
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY\n")
    (home / ".netrc").write_text("machine x password y\n")
    (home / "notes.txt").write_text("visible\n")
    yield home
    shutil.rmtree(home)


def _workspace(tmp_path: Path) -> Path:
    workspace = tmp_path / "work"
    workspace.mkdir(exist_ok=True)
    return workspace


class TestHidden:
    """Hidden paths are not even readable: files read as empty, directories are empty."""

    async def test_credential_stores_and_home(self, launcher: Launcher, tmp_path: Path, user_home: Path) -> None:
        daemon_home = user_home / ".hermes-actors"
        daemon_home.mkdir()
        (daemon_home / ".env").write_text("OPENAI_API_KEY=sk-secret\n")
        policy = policy_for(
            SandboxMode.WORKSPACE_WRITE, _workspace(tmp_path), home=daemon_home, environ={"HOME": str(user_home)}
        )
        code, output = await run(
            launcher, policy,
            f"cat {user_home}/.ssh/id_ed25519 2>/dev/null || echo no-key; cat {daemon_home}/.env 2>/dev/null || echo no-env; "
            f"echo files:$(find {user_home}/.ssh {daemon_home} -mindepth 1 | wc -l); cat {user_home}/notes.txt; "
            f"cat {user_home}/.netrc",
        )  # fmt: skip
        # A hidden file is /dev/null on a nodev mount: it cannot even be opened.
        assert output == f"no-key\nno-env\nfiles:0\nvisible\ncat: {user_home}/.netrc: Permission denied\n"

    async def test_hidden_wins_over_writable(self, launcher: Launcher, tmp_path: Path) -> None:
        workspace = _workspace(tmp_path)
        daemon_home = workspace / "home"
        daemon_home.mkdir()
        (daemon_home / "state.db").write_text("rows")
        policy = policy_for(SandboxMode.WORKSPACE_WRITE, workspace, home=daemon_home)
        code, output = await run(launcher, policy, f"ls -A {daemon_home}; touch {daemon_home}/x 2>&1 | grep -c Read-only")
        assert (code, output) == (0, "1\n")
        assert not (daemon_home / "x").exists()

    async def test_cwd_inside_hidden_is_refused(self, launcher: Launcher, tmp_path: Path) -> None:
        workspace = _workspace(tmp_path)
        policy = policy_for(SandboxMode.WORKSPACE_WRITE, workspace, home=workspace / "home")
        (workspace / "home").mkdir()
        with pytest.raises(PathRefused, match="HERMES_ACTORS_HOME"):
            await launcher.spawn(["true"], policy=policy, cwd=str(workspace / "home"), env=BASE_ENV)


class TestWritable:
    """Only the writable roots and the private /tmp take writes."""

    async def test_workspace_write(self, launcher: Launcher, tmp_path: Path) -> None:
        outside = Path("/var/tmp") / f"hx-outside-{os.getpid()}-{tmp_path.name}"
        outside.mkdir()
        try:
            workspace = _workspace(tmp_path)
            policy = policy_for(SandboxMode.WORKSPACE_WRITE, workspace)
            code, output = await run(
                launcher, policy, f"echo in > {workspace}/in.txt; echo t > /tmp/t; echo out > {outside}/out.txt"
            )
            assert code != 0 and "Read-only file system" in output
            assert (workspace / "in.txt").read_text() == "in\n"
            assert Path(policy.tmp_dir, "t").read_text() == "t\n"
            assert not (outside / "out.txt").exists()
        finally:
            outside.rmdir()

    async def test_read_only_mode(self, launcher: Launcher, tmp_path: Path) -> None:
        workspace = _workspace(tmp_path)
        (workspace / "readme").write_text("hello\n")
        policy = policy_for(SandboxMode.READ_ONLY, workspace)
        code, output = await run(launcher, policy, f"cat readme; echo x > /tmp/x; echo y > {workspace}/y")
        assert code != 0 and output.startswith("hello\n") and "Read-only file system" in output
        assert not (workspace / "y").exists()
        assert Path(policy.tmp_dir, "x").exists()

    async def test_tmp_is_private_per_session(self, launcher: Launcher, tmp_path: Path) -> None:
        workspace = _workspace(tmp_path)
        first = policy_for(SandboxMode.WORKSPACE_WRITE, workspace, session="a")
        second = policy_for(SandboxMode.WORKSPACE_WRITE, workspace, session="b")
        assert (await run(launcher, first, "echo mine > /tmp/note; echo $TMPDIR"))[1] == "/tmp\n"
        # The second session's /tmp holds only the mount points of its workspace (under the host's /tmp)
        # and of our interpreter, where that lives under the host's /tmp too.
        code, output = await run(launcher, second, "ls -A /tmp; cat /tmp/note 2>/dev/null || echo no-note")
        mount_points = {Path(p).parts[2] for p in (str(workspace), *_INTERPRETER_PREFIXES) if p.startswith("/tmp/")}
        assert (code, output.split("\n")[-2], set(output.split("\n")[:-2])) == (0, "no-note", mount_points)
        assert Path(first.tmp_dir, "note").read_text() == "mine\n"


class TestInterpreter:
    """Our interpreter stays in sight when it lives under the host's /tmp (a checkout or CI clone there)."""

    async def test_prefix_under_host_tmp_is_bound_read_only(
        self, launcher: Launcher, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        prefix = Path(tempfile.mkdtemp(prefix="hx-prefix-", dir="/tmp"))
        other = Path(tempfile.mkdtemp(prefix="hx-other-", dir="/tmp"))
        try:
            (prefix / "python").write_text("interpreter\n")
            (other / "note").write_text("host tmp\n")
            monkeypatch.setattr("tools.jail._mounts._INTERPRETER_PREFIXES", (str(prefix),))
            policy = policy_for(SandboxMode.WORKSPACE_WRITE, _workspace(tmp_path))
            code, output = await run(
                launcher, policy,
                f"cat {prefix}/python; cat {other}/note 2>/dev/null || echo other-hidden; "
                f"touch {prefix}/x 2>/dev/null || echo read-only",
            )  # fmt: skip
            assert (code, output.split()) == (0, ["interpreter", "other-hidden", "read-only"])
        finally:
            shutil.rmtree(prefix)
            shutil.rmtree(other)


class TestNamespaces:
    """Own PID namespace; network off leaves only loopback."""

    async def test_proc_shows_only_the_jail(self, launcher: Launcher, tmp_path: Path) -> None:
        policy = policy_for(SandboxMode.WORKSPACE_WRITE, _workspace(tmp_path))
        code, output = await run(
            launcher, policy, f"ls /proc | grep -c '^[0-9]'; cat /proc/{os.getpid()}/environ || echo no-daemon"
        )
        processes, *rest = output.splitlines()
        assert int(processes) <= 4  # init, bash, ls, grep
        assert rest[-1] == "no-daemon"

    async def test_network_off(self, launcher: Launcher, tmp_path: Path) -> None:
        policy = policy_for(SandboxMode.WORKSPACE_WRITE, _workspace(tmp_path), config=SandboxConfig(network=False))
        code, output = await run(launcher, policy, "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '")
        assert (code, output) == (0, "lo\n")

    async def test_network_on_by_default(self, launcher: Launcher, tmp_path: Path) -> None:
        policy = policy_for(SandboxMode.WORKSPACE_WRITE, _workspace(tmp_path))
        code, output = await run(launcher, policy, "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | sort")
        assert code == 0 and output.splitlines() == sorted(name for _, name in socket.if_nameindex())

    @pytest.mark.parametrize(("network", "expected"), [(False, "unreachable"), (True, "reached")])
    async def test_host_loopback(self, launcher: Launcher, tmp_path: Path, network: bool, expected: str) -> None:
        """A listener on the host's loopback (the HTTP API's) is out of the jail's reach only with network off."""
        with socket.socket() as listener:
            listener.bind(("127.0.0.1", 0))
            listener.listen()
            port = listener.getsockname()[1]
            policy = policy_for(SandboxMode.READ_ONLY, _workspace(tmp_path), config=SandboxConfig(network=network))
            connect = f"(exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo reached || echo unreachable"
            assert await run(launcher, policy, connect) == (0, f"{expected}\n")


class TestSshAgent:
    """The agent's socket is in the jail only when the user chose it."""

    async def test_bound_when_chosen(self, launcher: Launcher, tmp_path: Path) -> None:
        agent_dir = Path("/var/tmp") / f"hx-agent-{os.getpid()}-{tmp_path.name}"
        agent_dir.mkdir()
        agent = socket.socket(socket.AF_UNIX)
        try:
            agent.bind(str(agent_dir / "agent.sock"))
            env = {**BASE_ENV, "SSH_AUTH_SOCK": str(agent_dir / "agent.sock")}
            chosen = policy_for(
                SandboxMode.WORKSPACE_WRITE, _workspace(tmp_path), config=SandboxConfig(ssh_agent=True), environ=env
            )
            probe = f'echo "$SSH_AUTH_SOCK"; test -S /tmp/.ssh-agent.sock && echo bound; test -S {agent_dir}/agent.sock && echo host'
            assert (await run(launcher, chosen, probe, env=env))[1] == "/tmp/.ssh-agent.sock\nbound\nhost\n"
            refused = policy_for(SandboxMode.WORKSPACE_WRITE, _workspace(tmp_path), environ=env)
            assert (await run(launcher, refused, probe, env=env))[1] == "\n"
        finally:
            agent.close()
            (agent_dir / "agent.sock").unlink(missing_ok=True)
            agent_dir.rmdir()
