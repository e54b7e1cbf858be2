"""Profiles through the CLI: ``profiles list|create|delete|show``, ``-p NAME`` and ``HERMES_ACTORS_PROFILE``
selecting a home with a daemon of its own, two profiles' daemons at once, and a profile's jailed commands
that cannot read any other profile's keys (as root and as an ordinary user)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.daemon.helpers import REPO, ScriptedProviderProcess, environment, run_cli
from tests.daemon.jailed import wait_until
from tests.jail.as_nobody import NOBODY

DEFAULT_SECRET = "hx-default-profile-key-41a"
WORK_SECRET = "hx-work-profile-key-41b"
OTHER_SECRET = "hx-other-profile-key-41c"


def _json(result: subprocess.CompletedProcess[str]) -> dict:
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _stop_all(root: Path, *profiles: str) -> None:
    for name in profiles:
        run_cli(root, "-p", name, "stop")


class TestNames:
    """A profile name is one safe path component (Hermes's rule); anything else is refused before any file
    is touched."""

    @pytest.mark.parametrize("name", ["../evil", "a/b", ".hidden", "_x", "", "x" * 65, "root", "tmp"])
    def test_bad_names_are_refused(self, home: Path, name: str) -> None:
        result = run_cli(home, "profiles", "create", name)
        assert result.returncode == 2
        assert "profile name" in result.stderr
        assert not (home / "profiles").exists() or list((home / "profiles").iterdir()) == []
        assert not (home.parent / "evil").exists()

    def test_a_bad_environment_name_is_refused(self, home: Path) -> None:
        result = subprocess.run(
            [sys.executable, "-m", "cli", "status"], env=environment(home, HERMES_ACTORS_PROFILE="../up"),
            cwd=REPO, capture_output=True, text=True, timeout=30,
        )  # fmt: skip
        assert result.returncode == 2 and "invalid profile name '../up'" in result.stderr

    def test_names_are_lower_cased(self, home: Path) -> None:
        assert _json(run_cli(home, "profiles", "create", "Work", "--json"))["name"] == "work"
        assert _json(run_cli(home, "-p", "WORK", "profiles", "show", "work", "--json"))["selected"] is True

    def test_an_unknown_profile_is_refused(self, home: Path) -> None:
        result = run_cli(home, "-p", "nope", "status")
        assert result.returncode == 2
        assert "no profile 'nope'" in result.stderr and "profiles create nope" in result.stderr
        assert not (home / "profiles" / "nope").exists()

    def test_the_default_profile_cannot_be_created_or_deleted(self, home: Path) -> None:
        for verb in (["create"], ["delete", "--yes"]):
            result = run_cli(home, "profiles", verb[0], "default", *verb[1:])
            assert result.returncode == 2 and "the default profile is HERMES_ACTORS_HOME itself" in result.stderr


class TestCreate:
    """A new profile is a private directory with an empty ``.env`` of its own; only ``--clone`` copies."""

    def test_nothing_secret_is_copied_by_default(self, home: Path) -> None:
        home.mkdir(mode=0o700)
        (home / ".env").write_text(f"OPENAI_API_KEY={DEFAULT_SECRET}\n")
        (home / "config.yaml").write_text("model:\n  default: gpt-4.1\n")
        created = _json(run_cli(home, "profiles", "create", "work", "--json"))
        profile = Path(created["home"])
        assert profile == home / "profiles" / "work" and created["copied"] == []
        assert sorted(os.listdir(profile)) == [".env"]
        assert DEFAULT_SECRET not in (profile / ".env").read_text()
        for path in (profile, profile / ".env"):
            assert path.stat().st_mode & 0o077 == 0, oct(path.stat().st_mode)
        assert run_cli(home, "profiles", "create", "work").returncode == 2  # exists

    def test_clone_copies_settings_keys_memories_and_skills(self, home: Path) -> None:
        (home / "memories").mkdir(parents=True)
        (home / "skills" / "mine").mkdir(parents=True)
        (home / ".env").write_text(f"OPENAI_API_KEY={DEFAULT_SECRET}\n")
        (home / "config.yaml").write_text("model:\n  default: gpt-4.1\n")
        (home / "memories" / "MEMORY.md").write_text("likes tea")
        (home / "skills" / "mine" / "SKILL.md").write_text("---\nname: mine\ndescription: d\n---\nbody\n")
        (home / "state.db").write_text("history")
        created = _json(run_cli(home, "profiles", "create", "work", "--clone", "--json"))
        profile = Path(created["home"])
        assert created["copied"] == [".env", "config.yaml", "memories/MEMORY.md", "skills"]
        assert (profile / ".env").read_text() == f"OPENAI_API_KEY={DEFAULT_SECRET}\n"
        assert (profile / ".env").stat().st_mode & 0o777 == 0o600
        assert (profile / "memories" / "MEMORY.md").read_text() == "likes tea"
        assert not (profile / "state.db").exists()
        shown = _json(run_cli(home, "profiles", "show", "work", "--json"))
        assert shown["skills"] == 1 and shown["config"] and shown["env_file"] and not shown["store"]

    def test_clone_all_leaves_history_runtime_and_other_profiles(self, home: Path) -> None:
        home.mkdir()
        (home / "config.yaml").write_text("")
        (home / "state.db").write_text("history")
        (home / "run").mkdir()
        (home / "run" / "daemon.lock").write_text("1")
        (home / "scripts").mkdir()
        (home / "scripts" / "job.sh").write_text("echo")
        assert run_cli(home, "profiles", "create", "first").returncode == 0
        copied = _json(run_cli(home, "profiles", "create", "second", "--clone-all", "--json"))["copied"]
        assert copied == ["config.yaml", "scripts"]
        assert sorted(os.listdir(home / "profiles" / "second")) == [".env", "config.yaml", "scripts"]

    def test_clone_from_another_profile(self, home: Path) -> None:
        assert run_cli(home, "profiles", "create", "first").returncode == 0
        (home / "profiles" / "first" / "config.yaml").write_text("timezone: Europe/Paris\n")
        created = _json(run_cli(home, "profiles", "create", "second", "--clone-from", "first", "--json"))
        assert created["source"] == "first"
        assert (home / "profiles" / "second" / "config.yaml").read_text() == "timezone: Europe/Paris\n"
        assert run_cli(home, "profiles", "create", "third", "--clone-from", "absent").returncode == 2


class TestDelete:
    """Deleting asks (or needs ``--yes``), and is refused while the profile's daemon runs."""

    def test_needs_yes_without_a_terminal(self, home: Path) -> None:
        assert run_cli(home, "profiles", "create", "work").returncode == 0
        result = run_cli(home, "profiles", "delete", "work")
        assert result.returncode == 2 and "--yes" in result.stderr
        assert (home / "profiles" / "work").is_dir()
        assert _json(run_cli(home, "profiles", "delete", "work", "--yes", "--json"))["deleted"] is True
        assert not (home / "profiles" / "work").exists()
        assert run_cli(home, "profiles", "delete", "work", "--yes").returncode == 2

    def test_refused_while_its_daemon_runs(self, home: Path) -> None:
        assert run_cli(home, "profiles", "create", "work").returncode == 0
        daemon = subprocess.Popen(
            [sys.executable, "-m", "cli", "-p", "work", "daemon"], env=environment(home), cwd=REPO,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            wait_until(lambda: (home / "profiles" / "work" / "run" / "control.sock").exists(), 30, "the daemon")
            assert _json(run_cli(home, "profiles", "show", "work", "--json"))["daemon_pid"] == daemon.pid
            result = run_cli(home, "profiles", "delete", "work", "--yes")
            assert result.returncode == 1 and "is running" in result.stderr and "-p work stop" in result.stderr
            assert (home / "profiles" / "work" / "run" / "control.sock").exists()
        finally:
            _stop_all(home, "work")
            daemon.wait(20)
        assert run_cli(home, "profiles", "delete", "work", "--yes").returncode == 0


class TestTwoDaemons:
    """Two profiles' daemons run at once, each started by the CLI, each with its own store and socket."""

    def test_each_sees_only_its_own_sessions(self, home: Path, provider: ScriptedProviderProcess) -> None:
        assert run_cli(home, "profiles", "create", "work").returncode == 0
        try:
            for profile, title in (("default", "home-chat"), ("work", "work-chat")):
                provider.push({"text": f"hello from {profile}"})
                result = run_cli(
                    home, "-p", profile, "chat", "-q", "hi", "--title", title, *provider.chat_flags(), timeout=60
                )
                assert result.returncode == 0, result.stderr
                assert f"hello from {profile}" in result.stdout
            listed = _json(run_cli(home, "profiles", "list", "--json"))["profiles"]
            pids = {row["name"]: row["daemon_pid"] for row in listed}
            assert set(pids) == {"default", "work"} and None not in pids.values() and pids["default"] != pids["work"]
            for profile, title in (("default", "home-chat"), ("work", "work-chat")):
                status = _json(run_cli(home, "-p", profile, "status", "--json"))
                assert status["pid"] == pids[profile]
                sessions = _json(run_cli(home, "-p", profile, "sessions", "list", "--json"))["sessions"]
                assert [s["title"] for s in sessions] == [title]
            # The environment variable selects the same daemon as -p.
            via_env = subprocess.run(
                [sys.executable, "-m", "cli", "status", "--json"], env=environment(home, HERMES_ACTORS_PROFILE="work"),
                cwd=REPO, capture_output=True, text=True, timeout=30,
            )  # fmt: skip
            assert json.loads(via_env.stdout)["pid"] == pids["work"]
            assert (home / "state.db").exists() and (home / "profiles" / "work" / "state.db").exists()
        finally:
            _stop_all(home, "default", "work")


_READ_EVERY_KEY = (
    "for f in {root}/.env {root}/profiles/work/.env {root}/profiles/other/.env {root}/config.yaml; do "
    "cat $f 2>&1; done; ls -a {root} {root}/profiles 2>&1; echo probe-ran"
)


@pytest.fixture
def tree() -> Iterator[Path]:
    """A root home under ``/var/tmp`` (a jail's ``/tmp`` is its own, which would hide it anyway) with a key in
    the default profile's ``.env`` and in two named profiles' (``work`` and ``other``)."""
    base = Path(tempfile.mkdtemp(prefix="hx-prof-", dir="/var/tmp"))
    os.chmod(base, 0o755)
    root = base / "home"
    for directory, secret in ((root, DEFAULT_SECRET), (root / "profiles" / "work", WORK_SECRET),
                              (root / "profiles" / "other", OTHER_SECRET)):  # fmt: skip
        directory.mkdir(parents=True, mode=0o700)
        (directory / ".env").write_text(f"HX_PROFILE_KEY={secret}\n")
        (directory / "config.yaml").write_text("sandbox:\n  mode: workspace-write\n  max_mode: workspace-write\n")
    (base / "work").mkdir(mode=0o700)
    yield base
    shutil.rmtree(base, ignore_errors=True)


def _probe(base: Path, profile: str, provider: ScriptedProviderProcess, runner: list[str]) -> str:
    """Run the key-reading command through the terminal tool of a jailed session of ``profile`` (its daemon
    and the CLI run as ``runner``'s user); what the tool returned to the model."""
    root = base / "home"
    provider.reset()
    command = _READ_EVERY_KEY.format(root=root)
    provider.push({"tool_calls": [{"id": "p1", "name": "terminal", "arguments": {"command": command}}]}, {"text": "done"})
    before = len(provider.requests())
    env = {"PATH": os.environ["PATH"], "HOME": str(base), "PYTHONPATH": str(REPO), "HERMES_ACTORS_HOME": str(root)}
    cli = [*runner, sys.executable, "-m", "cli", "-p", profile]
    # Started here rather than by the chat: an ordinary user cannot run this interpreter from inside another
    # one where it lives under root's private home; the daemon is still told its profile by -p alone.
    log = base / f"{profile}-daemon.log"
    with open(log, "wb") as output:
        daemon = subprocess.Popen([*cli, "daemon"], env=env, cwd=REPO, stdin=subprocess.DEVNULL, stdout=output, stderr=output)
    home = root if profile == "default" else root / "profiles" / profile
    try:
        wait_until(lambda: (home / "run" / "control.sock").exists() or daemon.poll() is not None, 30, "the daemon")
        assert daemon.poll() is None, log.read_text()
        result = subprocess.run(
            [*cli, "chat", "--sandbox", "workspace-write", "-q", "read", *provider.chat_flags()], env=env,
            cwd=base / "work", capture_output=True, text=True, timeout=90,
        )  # fmt: skip
        assert result.returncode == 0, result.stdout + result.stderr
    finally:
        subprocess.run([*cli, "stop"], env=env, cwd=REPO, capture_output=True, timeout=60)
        daemon.wait(30)
    answered = provider.requests()[before:]
    tool_messages = [
        message for request in answered for message in request["body"].get("messages", [])
        if message.get("role") == "tool"
    ]  # fmt: skip
    assert tool_messages, answered
    return str(tool_messages[-1]["content"])


class TestJailHidesOtherProfiles:
    """A jailed command of one profile's session reads no profile's ``.env`` or config (not even the default
    profile's, whose home holds them all), as root and as an ordinary user."""

    @pytest.mark.parametrize("profile", ["work", "default"])
    def test_as_root(self, tree: Path, provider: ScriptedProviderProcess, profile: str) -> None:
        output = _probe(tree, profile, provider, [])
        assert "probe-ran" in output and "profiles/other/.env: No such file" in output, output
        for secret in (DEFAULT_SECRET, WORK_SECRET, OTHER_SECRET, "max_mode"):
            assert secret not in output, output

    def test_as_an_ordinary_user(self, tree: Path, provider: ScriptedProviderProcess) -> None:
        setpriv = shutil.which("setpriv")
        if os.geteuid() != 0 or setpriv is None:
            pytest.skip("needs root and setpriv to become an ordinary user")
        for path in [tree, *tree.rglob("*")]:
            os.chown(path, NOBODY, NOBODY)
        output = _probe(tree, "work", provider, [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"])
        assert "probe-ran" in output and "profiles/other/.env: No such file" in output, output
        for secret in (DEFAULT_SECRET, WORK_SECRET, OTHER_SECRET, "max_mode"):
            assert secret not in output, output
